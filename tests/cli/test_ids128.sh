#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of idmint's UUID, ULID and ObjectId commands: exact
# outputs of decode on published vectors (RFC 9562, the ULID spec, MongoDB's
# docs) in text and JSON; how decode tells the kinds apart and --kind; the
# ids uuid7, uuid4, ulid and objectid mint (distinct, strictly increasing
# where promised, carrying the current time, decoding to the right version)
# in every output format; and every bad-usage case (exit 2, exactly one
# stderr line naming the problem, nothing on stdout).
#
# Usage: bash test_ids128.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need python3 script
now_ms() {
    local ms
    ms=$(date +%s%3N 2>/dev/null)
    case $ms in
    *N* | '') echo "$(($(date +%s) * 1000))" ;;
    *) echo "$ms" ;;
    esac
}
# lines FILE: its number of lines.
lines() { wc -l <"$1" | tr -d ' '; }
# matching REGEX FILE: how many whole lines of FILE match the extended REGEX.
matching() { grep -Ecx -- "$1" "$2"; }
# distinct FILE: how many distinct lines.
distinct() { sort -u "$1" | wc -l | tr -d ' '; }
# increasing_n FILE N: N numbers, none below the one before.
increasing_n() { [ "$(lines "$1")" -eq "$2" ] && sort -C -n "$1"; }
# strictly_increasing FILE N: N lines, each above the one before (bytewise).
strictly_increasing() { [ "$(lines "$1")" -eq "$2" ] && sort -C -u "$1"; }
# times_between FILE LO HI: FILE holds one unix_ms per line, some, all in
# [LO, HI].
times_between() {
    [ -s "$1" ] && awk -v lo="$2" -v hi="$3" '
        !/^[0-9]+$/ || $1 + 0 < lo + 0 || $1 + 0 > hi + 0 { bad = 1 }
        END { exit bad || NR == 0 }' "$1"
}
# unix_ms_of FILE: the unix_ms= values of decode's text output, one a line.
unix_ms_of() { sed -nE 's/.* unix_ms=([0-9]+)( .*)?$/\1/p' "$1"; }
# dashed: hex UUIDs (32 digits a line) to 8-4-4-4-12 text.
dashed() { sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12})$/\1-\2-\3-\4-\5/'; }
# hexdump FILE: FILE's bytes as lower-case hex digits, one line.
hexdump() { od -An -v -tx1 "$1" | tr -d ' \n'; }
# same_nonempty A B: A and B have the same bytes, and some.
same_nonempty() { [ -s "$1" ] && cmp -s "$1" "$2"; }
# ids_kept DECODED IDS: decode's output DECODED starts its lines with the
# ids of file IDS, in order.
ids_kept() { [ -s "$1" ] && cut -d' ' -f1 "$1" | cmp -s - "$2"; }
# not_sorted FILE: FILE's lines are out of order somewhere.
not_sorted() { [ -s "$1" ] && ! sort -C "$1"; }
# hex_ids_increasing FILE N REGEX: N lines, all matching REGEX, strictly increasing.
hex_ids_increasing() { [ "$(matching "$3" "$1")" -eq "$2" ] && strictly_increasing "$1" "$2"; }
# chunks WIDTH: split stdin (one line) into lines of WIDTH characters.
chunks() { fold -w "$1"; echo; }

UUID_RE='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
UUID7_RE='[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}'
UUID4_RE='[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}'
ULID_RE='[0-7][0-9A-HJKMNP-TV-Z]{25}'
OID_RE='[0-9a-f]{24}'
ISO_RE='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
SLACK=5000 # ms either side of a run that an id's time may lie

NEW_CMDS='uuid7 uuid4 ulid objectid'

# ---------------------------------------------------------------- help

run --help
check "--help: exit 0, usage on stdout" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(head -n 1 "$T/out")" = 'usage: idmint [--version] [--help] COMMAND [ARGS]'
for c in $NEW_CMDS decode; do
    check "--help lists $c" grep -Eq "^  $c +[a-z]" "$T/out"
done
for c in $NEW_CMDS; do
    for h in --help -h; do
        run "$c" $h
        if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && head -n 1 "$T/out" | grep -q "^usage: idmint $c \[-n N\] \[--format text|hex|binary\]"; then
            ok
        else
            bad "idmint $c $h: $(show)"
        fi
    done
    "$BIN" "$c" --help >"$T/help1" 2>&1
    "$BIN" help "$c" >"$T/help2" 2>&1
    check "'idmint help $c' equals '$c --help'" same_nonempty "$T/help1" "$T/help2"
    run "$c" -n 5 --help
    check "$c -n 5 --help prints the usage only" \
        test "$RC" -eq 0 -a "$(grep -c "^usage: idmint $c " "$T/out")" -eq 1 -a "$(matching "$UUID_RE|$ULID_RE|$OID_RE" "$T/out")" -eq 0
done
run decode --help
check "decode --help mentions --kind" grep -q -- '--kind KIND' "$T/out"

# ---------------------------------------------------------------- decode: known answers

# RFC 9562, appendix A.6: the UUIDv7 example.
A6='017f22e2-79b0-7cc3-98c4-dc0c0c07398f kind=uuid version=7 variant=rfc9562 time=2022-02-22T19:22:22.000Z unix_ms=1645557742000'
A6_JSON='{"id":"017f22e2-79b0-7cc3-98c4-dc0c0c07398f","kind":"uuid","version":7,"variant":"rfc9562","time":"2022-02-22T19:22:22.000Z","unix_ms":1645557742000}'
expect_out "$A6" decode 017f22e2-79b0-7cc3-98c4-dc0c0c07398f
expect_out "$A6" decode 017F22E2-79B0-7CC3-98C4-DC0C0C07398F
expect_out "$A6" decode --kind uuid 017f22e2-79B0-7cc3-98C4-dc0c0c07398f
expect_out "$A6_JSON" decode --json 017f22e2-79b0-7cc3-98c4-dc0c0c07398f
expect_out "$A6_JSON" decode 017F22E2-79B0-7CC3-98C4-DC0C0C07398F --json
# RFC 9562, appendix A.3: the UUIDv4 example.
V4='919108f7-52d1-4320-9bac-f847db4148a8 kind=uuid version=4 variant=rfc9562'
expect_out "$V4" decode 919108f7-52d1-4320-9bac-f847db4148a8
expect_out '{"id":"919108f7-52d1-4320-9bac-f847db4148a8","kind":"uuid","version":4,"variant":"rfc9562"}' \
    decode --json 919108F7-52D1-4320-9BAC-F847DB4148A8
# The variant field's four values; a version 7 nibble outside the RFC
# variant has no time.
expect_out '00000000-0000-0000-0000-000000000000 kind=uuid version=0 variant=ncs
ffffffff-ffff-ffff-ffff-ffffffffffff kind=uuid version=15 variant=future
00000000-0000-7000-c000-000000000000 kind=uuid version=7 variant=microsoft
00000000-0000-7000-e000-000000000000 kind=uuid version=7 variant=future
00000000-0000-7000-8000-000000000000 kind=uuid version=7 variant=rfc9562 time=1970-01-01T00:00:00.000Z unix_ms=0' \
    decode 00000000-0000-0000-0000-000000000000 FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF \
    00000000-0000-7000-c000-000000000000 00000000-0000-7000-e000-000000000000 00000000-0000-7000-8000-000000000000
expect_out '{"id":"00000000-0000-0000-0000-000000000000","kind":"uuid","version":0,"variant":"ncs"}' \
    decode --json 00000000-0000-0000-0000-000000000000

# The ULID spec's examples: 01ARZ3NDEKTSV4RRFFQ69G5FAV is ulid()'s sample
# output (its time, 01ARZ3NDEK, is 1469922850259 ms); ulid(1469918176385)
# gives the time part 01ARYZ6S41.
ULID1='01ARZ3NDEKTSV4RRFFQ69G5FAV kind=ulid time=2016-07-30T23:54:10.259Z unix_ms=1469922850259 uuid=01563e3a-b5d3-d676-4c61-efb99302bd5b'
expect_out "$ULID1" decode 01ARZ3NDEKTSV4RRFFQ69G5FAV
expect_out "$ULID1" decode 01arz3ndektsv4rrffq69g5fav
expect_out "$ULID1" decode --kind ulid 01ARZ3NDEKTSV4RRFFQ69G5FAV
expect_out '01ARYZ6S41TSV4RRFFQ69G5FAV kind=ulid time=2016-07-30T22:36:16.385Z unix_ms=1469918176385 uuid=01563df3-6481-d676-4c61-efb99302bd5b' \
    decode 01ARYZ6S41TSV4RRFFQ69G5FAV
expect_out '{"id":"01ARYZ6S41TSV4RRFFQ69G5FAV","kind":"ulid","time":"2016-07-30T22:36:16.385Z","unix_ms":1469918176385,"uuid":"01563df3-6481-d676-4c61-efb99302bd5b"}' \
    decode --json 01ARYZ6S41TSV4RRFFQ69G5FAV
# The largest ULID: its time is past year 9999.
expect_out '7ZZZZZZZZZZZZZZZZZZZZZZZZZ kind=ulid time=- unix_ms=281474976710655 uuid=ffffffff-ffff-ffff-ffff-ffffffffffff' \
    decode 7ZZZZZZZZZZZZZZZZZZZZZZZZZ
expect_out '{"id":"7ZZZZZZZZZZZZZZZZZZZZZZZZZ","kind":"ulid","time":null,"unix_ms":281474976710655,"uuid":"ffffffff-ffff-ffff-ffff-ffffffffffff"}' \
    decode --json 7zzzzzzzzzzzzzzzzzzzzzzzzz
expect_out '00000000000000000000000000 kind=ulid time=1970-01-01T00:00:00.000Z unix_ms=0 uuid=00000000-0000-0000-0000-000000000000' \
    decode 00000000000000000000000000

# MongoDB's documentation example ObjectId.
OID1='507f1f77bcf86cd799439011 kind=objectid time=2012-10-17T21:13:27.000Z unix_ms=1350508407000 process=bcf86cd799 counter=4427793'
expect_out "$OID1" decode 507f1f77bcf86cd799439011
expect_out "$OID1" decode 507F1F77BCF86CD799439011
expect_out "$OID1" decode --kind objectid 507f1f77bcf86cd799439011
expect_out '{"id":"507f1f77bcf86cd799439011","kind":"objectid","time":"2012-10-17T21:13:27.000Z","unix_ms":1350508407000,"process":"bcf86cd799","counter":4427793}' \
    decode --json 507f1f77bcf86cd799439011
# A 24-digit decimal is an ObjectId, not a Snowflake id.
expect_out '000000010000000000000001 kind=objectid time=1970-01-01T00:00:01.000Z unix_ms=1000 process=0000000000 counter=1' \
    decode 000000010000000000000001

# Kinds mixed in one call keep their order; Snowflake ids print as before.
SF='2006515713438650368 time=2026-01-01T00:00:00.000Z unix_ms=1767225600000 datacenter=0 worker=1 seq=0'
expect_out "$SF
$A6
$ULID1
$OID1
$SF" decode 2006515713438650368 017f22e2-79b0-7cc3-98c4-dc0c0c07398f 01ARZ3NDEKTSV4RRFFQ69G5FAV \
    507f1f77bcf86cd799439011 0x1bd893690fc01000
expect_out '{"id":"2006515713438650368","time":"2026-01-01T00:00:00.000Z","unix_ms":1767225600000,"datacenter":0,"worker":1,"seq":0}
{"id":"507f1f77bcf86cd799439011","kind":"objectid","time":"2012-10-17T21:13:27.000Z","unix_ms":1350508407000,"process":"bcf86cd799","counter":4427793}' \
    decode --json 2006515713438650368 507f1f77bcf86cd799439011
# --layout still applies to the Snowflake ids among them.
expect_out '175928847299117063 time=2016-04-30T11:18:25.796Z unix_ms=1462015105796 worker=1 process=0 seq=7
'"$V4" decode --layout discord 175928847299117063 919108f7-52d1-4320-9bac-f847db4148a8

# --kind: 26 digits are a ULID unless --kind snowflake says otherwise.
expect_out '00000000000000000000000001 kind=ulid time=1970-01-01T00:00:00.000Z unix_ms=0 uuid=00000000-0000-0000-0000-000000000001' \
    decode 00000000000000000000000001
expect_out '1 time=2010-11-04T01:42:54.657Z unix_ms=1288834974657 datacenter=0 worker=0 seq=1' \
    decode --kind snowflake 00000000000000000000000001
expect_out '1 time=2010-11-04T01:42:54.657Z unix_ms=1288834974657 datacenter=0 worker=0 seq=1' \
    decode --kind=snowflake 000000000000000000000001
expect_out "$SF" decode --kind snowflake --layout twitter 2006515713438650368

"$BIN" decode --json 017f22e2-79b0-7cc3-98c4-dc0c0c07398f 01ARZ3NDEKTSV4RRFFQ69G5FAV 507f1f77bcf86cd799439011 \
    919108f7-52d1-4320-9bac-f847db4148a8 >"$T/dj" 2>&1
check "decode --json of every kind parses as JSON with the keys in order" python3 - "$T/dj" <<'EOF'
import json, sys
want = [
    ["id", "kind", "version", "variant", "time", "unix_ms"],
    ["id", "kind", "time", "unix_ms", "uuid"],
    ["id", "kind", "time", "unix_ms", "process", "counter"],
    ["id", "kind", "version", "variant"],
]
lines = open(sys.argv[1]).read().splitlines()
sys.exit(0 if [list(json.loads(l)) for l in lines] == want else 1)
EOF

# ---------------------------------------------------------------- decode: errors

# ULIDs: above 128 bits, letters outside Crockford's alphabet.
usage_prefix "idmint: decode: bad ULID '80000000000000000000000000': value out of range" decode 80000000000000000000000000
usage_prefix "idmint: decode: bad ULID 'ZZZZZZZZZZZZZZZZZZZZZZZZZZ': value out of range" decode ZZZZZZZZZZZZZZZZZZZZZZZZZZ
for ch in I L O U i l o u; do
    usage_prefix "idmint: decode: bad ULID '01ARZ3NDEKTSV4RRFFQ69G5FA$ch': malformed text" decode "01ARZ3NDEKTSV4RRFFQ69G5FA$ch"
    usage_prefix "idmint: decode: bad ULID '0${ch}ARZ3NDEKTSV4RRFFQ69G5FAV': malformed text" decode "0${ch}ARZ3NDEKTSV4RRFFQ69G5FAV"
done
usage_prefix "idmint: decode: bad ULID '01ARZ3NDEKTSV4RRFFQ69G5F-V': malformed text" decode 01ARZ3NDEKTSV4RRFFQ69G5F-V
usage_prefix "idmint: decode: bad ULID '01ARZ3NDEK': malformed text" decode --kind ulid 01ARZ3NDEK
usage_prefix "idmint: decode: bad ULID '01ARZ3NDEKTSV4RRFFQ69G5FAVX': malformed text" decode --kind ulid 01ARZ3NDEKTSV4RRFFQ69G5FAVX

# UUIDs: only the canonical 8-4-4-4-12 form.
U=017f22e2-79b0-7cc3-98c4-dc0c0c07398f
for bu in "{$U}" "urn:uuid:$U" "URN:UUID:$U" 017f22e279b07cc398c4dc0c0c07398f "${U%f}" "${U}0" \
    017f22e2-79b0-7cc3-98c4-dc0c0c07398g 017f22e2-79b0-7cc3-98c4x-dc0c0c07398 017f22e279b0-7cc3-98c4-dc0c0c07398f- \
    017f22e2_79b0_7cc3_98c4_dc0c0c07398f " $U" "$U " 017f22e2-79b0-7cc3-98c4-dc0c0c0739-8 \
    017f22e2--79b0-7cc3-98c4-dc0c0c07398 -017f22e2-79b0-7cc3-98c4-dc0c0c07398; do
    usage_prefix "idmint: decode: bad UUID '$bu': malformed text" decode "$bu"
done
usage_prefix "idmint: decode: bad UUID '$U,$U': malformed text" decode --kind uuid "$U,$U"

# ObjectIds: 24 hex digits exactly.
usage_prefix "idmint: decode: bad ObjectId '507f1f77bcf86cd79943901g': malformed text" decode 507f1f77bcf86cd79943901g
usage_prefix "idmint: decode: bad ObjectId '507f1f77bcf86cd79943901': malformed text" decode --kind objectid 507f1f77bcf86cd79943901
usage_prefix "idmint: decode: bad ObjectId '0x7f1f77bcf86cd799439011': malformed text" decode --kind objectid 0x7f1f77bcf86cd799439011
usage_prefix "idmint: decode: bad ObjectId '$U': malformed text" decode --kind objectid "$U"
# Near misses of no kind stay Snowflake errors, as before.
usage_prefix "idmint: decode: bad ID '507f1f77bcf86cd79943901': malformed text" decode 507f1f77bcf86cd79943901
# "0x" and more than 16 hex digits is no Snowflake id; at 26 characters it is
# a ULID (here of the year 2985), as the usage says.
expect_out \
  "0X507F1F77BCF86CD799439011 kind=ulid time=2985-11-15T08:29:15.367Z unix_ms=32057886555367 uuid=1d280ef0-bce7-5b1e-8331-a74a48348021" \
  decode 0x507f1f77bcf86cd799439011
usage_prefix "idmint: decode: bad ID '0x507f1f77bcf86cd79943': " decode 0x507f1f77bcf86cd79943

# --kind forces the kind on every argument.
usage_prefix "idmint: decode: bad UUID '2006515713438650368': malformed text" decode --kind uuid 2006515713438650368
usage_prefix "idmint: decode: bad ULID '507f1f77bcf86cd799439011': malformed text" decode --kind ulid 507f1f77bcf86cd799439011
usage_prefix "idmint: decode: bad ID '01ARZ3NDEKTSV4RRFFQ69G5FAV': malformed text" decode --kind snowflake 01ARZ3NDEKTSV4RRFFQ69G5FAV
usage_prefix "idmint: decode: bad ID '$U': malformed text" decode --kind snowflake "$U"
usage_prefix "idmint: decode: bad UUID '01ARZ3NDEKTSV4RRFFQ69G5FAV': malformed text" decode --kind uuid "$U" 01ARZ3NDEKTSV4RRFFQ69G5FAV
usage_exact "idmint: decode: bad --kind 'uuid7': use snowflake, uuid, ulid or objectid" decode --kind uuid7 "$U"
usage_exact "idmint: decode: bad --kind '': use snowflake, uuid, ulid or objectid" decode --kind= "$U"
usage_exact "idmint: decode: option '--kind' needs a value" decode "$U" --kind
usage_exact "idmint: decode: --layout applies to Snowflake-style ids only, not to --kind uuid" \
    decode --kind uuid --layout twitter "$U"
usage_exact "idmint: decode: --epoch applies to Snowflake-style ids only, not to --kind ulid" \
    decode --kind ulid --epoch 2020-01-01 01ARZ3NDEKTSV4RRFFQ69G5FAV
usage_exact "idmint: decode: no ID given (try 'idmint decode --help')" decode --kind uuid

# Every argument is checked before anything is printed.
usage_prefix "idmint: decode: bad ULID '80000000000000000000000000': value out of range" \
    decode "$U" 507f1f77bcf86cd799439011 80000000000000000000000000 01ARZ3NDEKTSV4RRFFQ69G5FAV
usage_prefix "idmint: decode: bad ID 'abc': malformed text" decode "$U" 01ARZ3NDEKTSV4RRFFQ69G5FAV abc
usage_prefix "idmint: decode: bad UUID '{$U}': malformed text" decode 2006515713438650368 "{$U}"
usage_prefix "idmint: decode: bad UUID 'x${U#?}\x0a': malformed text" decode "x${U#?}"$'\n'

# ---------------------------------------------------------------- mint: errors, every command

for c in $NEW_CMDS; do
    for bc in 0 10000001; do
        usage_exact "idmint: $c: bad count '$bc': must be 1 to 10000000" "$c" -n "$bc"
    done
    for bc in -1 +5 ' 5' '5 ' 1e3 '' 5x 0x 1.0; do
        usage_prefix "idmint: $c: bad count '$bc': malformed text" "$c" -n "$bc"
    done
    usage_prefix "idmint: $c: bad count '99999999999999999999': value out of range" "$c" --count 99999999999999999999
    usage_prefix "idmint: $c: bad count '': malformed text" "$c" --count=
    usage_prefix "idmint: $c: bad count '-1': malformed text" "$c" --count -1
    usage_exact "idmint: $c: option '-n' needs a value" "$c" -n
    usage_exact "idmint: $c: option '--count' needs a value" "$c" --count
    usage_exact "idmint: $c: option '--format' needs a value" "$c" --format
    for bf in json dec xml '' TEXT; do
        usage_exact "idmint: $c: bad --format '$bf': use text, hex or binary" "$c" --format "$bf"
    done
    usage_exact "idmint: $c: unexpected argument '5'" "$c" 5
    usage_exact "idmint: $c: unknown option '--bogus'" "$c" --bogus
    usage_exact "idmint: $c: unknown option '--layout'" "$c" --layout twitter
    usage_exact "idmint: $c: unknown option '-x'" "$c" -x
    usage_exact "idmint: $c: option '--help' takes no value (got '--help=1')" "$c" --help=1
done
for c in uuid7 uuid4 objectid; do
    usage_exact "idmint: $c: unknown option '--no-monotonic'" "$c" --no-monotonic
done
usage_exact "idmint: ulid: option '--no-monotonic' takes no value (got '--no-monotonic=1')" ulid --no-monotonic=1

# --format binary to a terminal is refused. script(1) (util-linux, in
# Debian's bsdutils) gives the run a terminal; first, that it does so and passes the status back.
script -qec 'test -t 1' /dev/null >/dev/null 2>&1
RC_TTY=$?
script -qec 'test ! -t 1' /dev/null >/dev/null 2>&1
RC_NOTTY=$?
check "script(1) runs a command on a terminal and passes its status back (got $RC_TTY and $RC_NOTTY, want 0 and 1)" \
    test "$RC_TTY" -eq 0 -a "$RC_NOTTY" -ne 0
for c in $NEW_CMDS; do
    script -qec "'$BIN' $c -n 3 --format binary 2>'$T/err'" /dev/null >"$T/tty"
    RC=$?
    if [ "$RC" -eq 2 ] && one_err_line && [ "$(tr -d '\r\n' <"$T/tty" | wc -c)" -eq 0 ] &&
        [ "$(cat "$T/err")" = "idmint: $c: refusing to write binary ids to a terminal: redirect the output, or use --format text or hex" ]; then
        ok
    else
        bad "idmint $c --format binary to a terminal: rc=$RC tty=[$(od -An -c "$T/tty" | head -3)] stderr=[$(cat "$T/err")]"
    fi
    script -qec "'$BIN' $c -n 3 --format hex 2>'$T/err'" /dev/null >"$T/tty"
    RC=$?
    check "idmint $c --format hex to a terminal is fine" \
        test "$RC" -eq 0 -a ! -s "$T/err" -a "$(tr -d '\r' <"$T/tty" | grep -Ecx '[0-9a-f]{24}|[0-9a-f]{32}')" -eq 3
done

# ---------------------------------------------------------------- mint: uuid7

run uuid7
check "uuid7: one UUIDv7 line, quiet" test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/out")" -eq 1 -a "$(matching "$UUID7_RE" "$T/out")" -eq 1

BEFORE=$(now_ms)
run uuid7 -n 10000
AFTER=$(now_ms)
cp "$T/out" "$T/u7"
check "uuid7 -n 10000: exit 0, quiet, 10000 UUIDv7 lines" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/u7")" -eq 10000 -a "$(matching "$UUID7_RE" "$T/u7")" -eq 10000
check "uuid7 -n 10000: all distinct" test "$(distinct "$T/u7")" -eq 10000
check "uuid7 -n 10000: strictly increasing" strictly_increasing "$T/u7" 10000
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/u7") >"$T/u7dec" 2>"$T/err"
check "uuid7: decode of 10000 ids keeps them and their order" \
    ids_kept "$T/u7dec" "$T/u7"
check "uuid7: every id decodes as version=7 variant=rfc9562 with a time" \
    test "$(grep -Ec "^$UUID7_RE kind=uuid version=7 variant=rfc9562 time=$ISO_RE unix_ms=[0-9]+\$" "$T/u7dec")" -eq 10000
unix_ms_of "$T/u7dec" >"$T/u7ms"
check "uuid7: every id's time is now (within $SLACK ms)" \
    times_between "$T/u7ms" $((BEFORE - SLACK)) $((AFTER + SLACK))
check "uuid7: the times do not decrease" increasing_n "$T/u7ms" 10000

# Two runs: the second one's ids follow the first's.
"$BIN" uuid7 -n 1000 >"$T/u7a"
"$BIN" uuid7 -n 1000 >"$T/u7b"
check "uuid7: two runs give 2000 distinct ids" test "$(cat "$T/u7a" "$T/u7b" | sort -u | wc -l)" -eq 2000

# --format hex: 32 digits; with dashes put back they are UUIDv7s.
BEFORE=$(now_ms)
run uuid7 -n 1000 --format hex
AFTER=$(now_ms)
cp "$T/out" "$T/u7hex"
check "uuid7 --format hex: 1000 lines of 32 lower-case hex digits" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/u7hex")" -eq 1000 -a "$(matching '[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}' "$T/u7hex")" -eq 1000
check "uuid7 --format hex: strictly increasing" strictly_increasing "$T/u7hex" 1000
dashed <"$T/u7hex" >"$T/u7hexd"
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/u7hexd") >"$T/u7hexdec"
check "uuid7 --format hex round-trips through decode" \
    ids_kept "$T/u7hexdec" "$T/u7hexd"
check "uuid7 --format hex: all version 7" test "$(grep -c ' kind=uuid version=7 variant=rfc9562 time=' "$T/u7hexdec")" -eq 1000
unix_ms_of "$T/u7hexdec" >"$T/u7hexms"
check "uuid7 --format hex: times are now" times_between "$T/u7hexms" $((BEFORE - SLACK)) $((AFTER + SLACK))

# --format binary: 16 bytes per id; each is a UUIDv7 of now.
BEFORE=$(now_ms)
"$BIN" uuid7 -n 1000 --format binary >"$T/u7bin" 2>"$T/err"
RC=$?
AFTER=$(now_ms)
check "uuid7 --format binary -n 1000: exit 0, quiet, 16000 bytes" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(wc -c <"$T/u7bin")" -eq 16000
hexdump "$T/u7bin" | chunks 32 | sed '/^$/d' >"$T/u7binhex"
check "uuid7 --format binary: 1000 ids of 32 hex digits, version nibble 7, variant 10" \
    test "$(lines "$T/u7binhex")" -eq 1000 -a "$(matching '[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}' "$T/u7binhex")" -eq 1000
check "uuid7 --format binary: strictly increasing" strictly_increasing "$T/u7binhex" 1000
while read -r h; do echo $((16#${h:0:12})); done <"$T/u7binhex" >"$T/u7binms"
check "uuid7 --format binary: times are now" times_between "$T/u7binms" $((BEFORE - SLACK)) $((AFTER + SLACK))

# ---------------------------------------------------------------- mint: uuid4

run uuid4
check "uuid4: one UUIDv4 line, quiet" test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/out")" -eq 1 -a "$(matching "$UUID4_RE" "$T/out")" -eq 1
run uuid4 -n 10000
cp "$T/out" "$T/u4"
check "uuid4 -n 10000: exit 0, quiet, 10000 UUIDv4 lines" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/u4")" -eq 10000 -a "$(matching "$UUID4_RE" "$T/u4")" -eq 10000
check "uuid4 -n 10000: all distinct" test "$(distinct "$T/u4")" -eq 10000
# Random ids: far from sorted (10000 sorted by chance: never).
check "uuid4 -n 10000: not in order" not_sorted "$T/u4"
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/u4") >"$T/u4dec"
check "uuid4: every id decodes as version=4 variant=rfc9562, no time" \
    test "$(grep -Ecx "$UUID4_RE kind=uuid version=4 variant=rfc9562" "$T/u4dec")" -eq 10000
run uuid4 -n 1000 --format hex
cp "$T/out" "$T/u4hex"
check "uuid4 --format hex: 1000 lines of 32 hex digits, version 4" \
    test "$RC" -eq 0 -a "$(lines "$T/u4hex")" -eq 1000 -a "$(matching '[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}' "$T/u4hex")" -eq 1000
dashed <"$T/u4hex" >"$T/u4hexd"
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/u4hexd") >"$T/u4hexdec"
check "uuid4 --format hex round-trips through decode as version 4" \
    test "$(grep -c ' kind=uuid version=4 variant=rfc9562$' "$T/u4hexdec")" -eq 1000 -a \
    "$(cut -d' ' -f1 "$T/u4hexdec" | cmp -s - "$T/u4hexd" && echo same)" = same
"$BIN" uuid4 -n 1000 --format binary >"$T/u4bin"
check "uuid4 --format binary -n 1000: 16000 bytes" test "$(wc -c <"$T/u4bin")" -eq 16000
hexdump "$T/u4bin" | chunks 32 | sed '/^$/d' >"$T/u4binhex"
check "uuid4 --format binary: 1000 distinct ids, version nibble 4, variant 10" \
    test "$(matching '[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}' "$T/u4binhex")" -eq 1000 -a "$(distinct "$T/u4binhex")" -eq 1000

# ---------------------------------------------------------------- mint: ulid

run ulid
check "ulid: one ULID line, quiet" test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/out")" -eq 1 -a "$(matching "$ULID_RE" "$T/out")" -eq 1
BEFORE=$(now_ms)
run ulid -n 10000
AFTER=$(now_ms)
cp "$T/out" "$T/ul"
check "ulid -n 10000: exit 0, quiet, 10000 ULID lines" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/ul")" -eq 10000 -a "$(matching "$ULID_RE" "$T/ul")" -eq 10000
check "ulid -n 10000: all distinct" test "$(distinct "$T/ul")" -eq 10000
check "ulid -n 10000: strictly increasing" strictly_increasing "$T/ul" 10000
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/ul") >"$T/uldec"
check "ulid: decode of 10000 ids keeps them and their order" \
    ids_kept "$T/uldec" "$T/ul"
check "ulid: every id decodes with a time and a UUID form" \
    test "$(grep -Ecx "$ULID_RE kind=ulid time=$ISO_RE unix_ms=[0-9]+ uuid=$UUID_RE" "$T/uldec")" -eq 10000
unix_ms_of "$T/uldec" >"$T/ulms"
check "ulid: every id's time is now" times_between "$T/ulms" $((BEFORE - SLACK)) $((AFTER + SLACK))
# The UUID form's first 48 bits are the time.
head -n 200 "$T/uldec" | while read -r _ _ _ ms u; do
    h=${u#uuid=}
    h=${h//-/}
    [ "$((16#${h:0:12}))" = "${ms#unix_ms=}" ] && echo ok
done >"$T/ulchk"
check "ulid: the UUID form carries the time in its first 48 bits" test "$(grep -c ok "$T/ulchk")" -eq 200
# Monotonic: within one millisecond the random part grows by exactly 1.
"$BIN" ulid -n 10000 --format hex >"$T/ulmono"
PAIRS=0
BAD_PAIRS=0
PREV=
while read -r h; do
    if [ -n "$PREV" ] && [ "${h:0:12}" = "${PREV:0:12}" ] && [ "${PREV:24:8}" != ffffffff ]; then
        PAIRS=$((PAIRS + 1))
        if [ "${h:0:24}" != "${PREV:0:24}" ] || [ $((16#${h:24:8})) -ne $((16#${PREV:24:8} + 1)) ]; then
            BAD_PAIRS=$((BAD_PAIRS + 1))
        fi
    fi
    PREV=$h
done <"$T/ulmono"
check "ulid: within a millisecond each id is the previous one plus 1 ($PAIRS pairs, $BAD_PAIRS bad)" \
    test "$(lines "$T/ulmono")" -eq 10000 -a "$PAIRS" -gt 0 -a "$BAD_PAIRS" -eq 0
run ulid -n 1000 --format hex
cp "$T/out" "$T/ulhex"
check "ulid --format hex: exit 0, quiet" test "$RC" -eq 0 -a ! -s "$T/err"
check "ulid --format hex: 1000 lines of 32 lower-case hex digits, increasing" \
    hex_ids_increasing "$T/ulhex" 1000 '[0-9a-f]{32}'
dashed <"$T/ulhex" >"$T/ulhexd"
# shellcheck disable=SC2046
"$BIN" decode --kind uuid $(cat "$T/ulhexd") >"$T/ulhexdec"
check "ulid --format hex, with dashes, decodes as UUIDs" \
    ids_kept "$T/ulhexdec" "$T/ulhexd"
BEFORE=$(now_ms)
"$BIN" ulid -n 1000 --format binary >"$T/ulbin"
AFTER=$(now_ms)
check "ulid --format binary -n 1000: 16000 bytes" test "$(wc -c <"$T/ulbin")" -eq 16000
hexdump "$T/ulbin" | chunks 32 | sed '/^$/d' >"$T/ulbinhex"
check "ulid --format binary: 1000 increasing ids of 32 hex digits" \
    hex_ids_increasing "$T/ulbinhex" 1000 '[0-9a-f]{32}'
while read -r h; do echo $((16#${h:0:12})); done <"$T/ulbinhex" >"$T/ulbinms"
check "ulid --format binary: times are now" times_between "$T/ulbinms" $((BEFORE - SLACK)) $((AFTER + SLACK))
# --no-monotonic: fresh random bits every time.
run ulid --no-monotonic -n 10000
cp "$T/out" "$T/ulnm"
check "ulid --no-monotonic -n 10000: 10000 distinct ULIDs" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(matching "$ULID_RE" "$T/ulnm")" -eq 10000 -a "$(distinct "$T/ulnm")" -eq 10000
check "ulid --no-monotonic: ids within a millisecond are not in order" not_sorted "$T/ulnm"

# ---------------------------------------------------------------- mint: objectid

run objectid
check "objectid: one ObjectId line, quiet" test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/out")" -eq 1 -a "$(matching "$OID_RE" "$T/out")" -eq 1
BEFORE=$(now_ms)
run objectid -n 10000
AFTER=$(now_ms)
cp "$T/out" "$T/oid"
check "objectid -n 10000: exit 0, quiet, 10000 ObjectId lines" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/oid")" -eq 10000 -a "$(matching "$OID_RE" "$T/oid")" -eq 10000
check "objectid -n 10000: all distinct" test "$(distinct "$T/oid")" -eq 10000
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/oid") >"$T/oiddec"
check "objectid: every id decodes with time, process and counter" \
    test "$(grep -Ecx "$OID_RE kind=objectid time=$ISO_RE unix_ms=[0-9]+000 process=[0-9a-f]{10} counter=[0-9]+" "$T/oiddec")" -eq 10000
unix_ms_of "$T/oiddec" >"$T/oidms"
check "objectid: every id's time is now (to the second)" times_between "$T/oidms" $((BEFORE - SLACK)) $((AFTER + SLACK))
check "objectid: one process value for the whole run" \
    test "$(sed -E 's/.* process=([0-9a-f]+) .*/\1/' "$T/oiddec" | sort -u | wc -l)" -eq 1
# shellcheck disable=SC2016
check "objectid: the counter goes up by 1 per id (modulo 2^24)" awk '
    { c = $NF; sub(/^counter=/, "", c); c += 0
      if (NR > 1 && c != (pc + 1) % 16777216) bad = 1
      pc = c }
    END { exit bad || NR != 10000 }' "$T/oiddec"
run objectid -n 1000 --format hex
cp "$T/out" "$T/oidhex"
check "objectid --format hex: 1000 lines of 24 hex digits" \
    test "$RC" -eq 0 -a "$(matching "$OID_RE" "$T/oidhex")" -eq 1000 -a "$(lines "$T/oidhex")" -eq 1000
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/oidhex") >"$T/oidhexdec"
check "objectid --format hex round-trips through decode" \
    ids_kept "$T/oidhexdec" "$T/oidhex"
check "objectid --format hex decodes as ObjectIds" test "$(grep -c ' kind=objectid time=' "$T/oidhexdec")" -eq 1000
BEFORE=$(now_ms)
"$BIN" objectid -n 1000 --format binary >"$T/oidbin"
AFTER=$(now_ms)
check "objectid --format binary -n 1000: 12000 bytes" test "$(wc -c <"$T/oidbin")" -eq 12000
hexdump "$T/oidbin" | chunks 24 | sed '/^$/d' >"$T/oidbinhex"
check "objectid --format binary: 1000 distinct ids of 24 hex digits" \
    test "$(matching "$OID_RE" "$T/oidbinhex")" -eq 1000 -a "$(distinct "$T/oidbinhex")" -eq 1000
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/oidbinhex") >"$T/oidbindec"
unix_ms_of "$T/oidbindec" >"$T/oidbinms"
check "objectid --format binary: decodes to 1000 ids" test "$(lines "$T/oidbinms")" -eq 1000
check "objectid --format binary: times are now" times_between "$T/oidbinms" $((BEFORE - SLACK)) $((AFTER + SLACK))

# ---------------------------------------------------------------- mint: option forms, output errors

for c in $NEW_CMDS; do
    for form in "-n5" "--count=5" "-n 5" "--count 0x5" "-n 005"; do
        # shellcheck disable=SC2086
        run "$c" $form
        check "$c $form: 5 lines" test "$RC" -eq 0 -a ! -s "$T/err" -a "$(lines "$T/out")" -eq 5 -a \
            "$(matching "$UUID_RE|$ULID_RE|$OID_RE" "$T/out")" -eq 5
    done
    run "$c" --format text -n 3
    check "$c --format text: 3 lines" test "$RC" -eq 0 -a "$(matching "$UUID_RE|$ULID_RE|$OID_RE" "$T/out")" -eq 3
    run "$c" -n 2 --format=hex
    check "$c --format=hex: 2 lines" test "$RC" -eq 0 -a "$(matching '[0-9a-f]{24}|[0-9a-f]{32}' "$T/out")" -eq 2

    # A reader that goes away ends the run quietly, with status 1.
    "$BIN" "$c" -n 10000000 2>"$T/err" | head -n 1 >"$T/out"
    RC=${PIPESTATUS[0]}
    check "$c into a closed pipe: exit 1, no message, the first id read" \
        test "$RC" -eq 1 -a ! -s "$T/err" -a "$(matching "$UUID_RE|$ULID_RE|$OID_RE" "$T/out")" -eq 1
    # /dev/full is on every Linux machine: a write there fails with ENOSPC.
    "$BIN" "$c" -n 3 >/dev/full 2>"$T/err"
    RC=$?
    check "$c to a full disk (/dev/full): exit 1, one line" \
        test "$RC" -eq 1 -a "$(grep -c "^idmint: $c: cannot write the output: " "$T/err")" -eq 1 -a "$(lines "$T/err")" -eq 1
done
run objectid -n 3 --format hex
cp "$T/out" "$T/oh"
check "objectid: text and hex are the same form" test "$(matching "$OID_RE" "$T/oh")" -eq 3

finish
