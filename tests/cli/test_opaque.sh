#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of `idmint encrypt` and `idmint decrypt` (opaque public
# ids): known answers, round trips in every format, fixed-length texts, key
# file forms (with and without a line end, upper case, CRLF), different keys
# giving different ids; and every error: key files missing, unreadable,
# not regular files (a directory, a device, a FIFO: refused at once, not
# waited on), empty, short, long, not hex, two lines, a NUL byte (exit 2,
# one stderr line that never shows the key), bad ids and texts, bad options.
#
# Usage: bash test_opaque.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

KEY_A=000102030405060708090a0b0c0d0e0f
KEY_B=8f3a6c21d4e5b7a90c1d2e3f40516273
printf '%s\n' "$KEY_A" >"$T/a.key"
printf '%s\n' "$KEY_B" >"$T/b.key"
MAX=9223372036854775807

# no_key_in_err KEYTEXT: the last run's stderr shows no 6 characters of it.
no_key_in_err() {
    local k=$1 i
    for ((i = 0; i + 6 <= ${#k}; i++)); do
        if grep -qF -- "${k:i:6}" "$T/err"; then return 1; fi
    done
    return 0
}

# ---------------------------------------------------------------- help

run --help
for c in encrypt decrypt; do
    check "--help lists $c" grep -Eq "^  $c " "$T/out"
done
for c in encrypt decrypt; do
    for h in --help -h; do
        run "$c" $h
        if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && head -n 1 "$T/out" | grep -q "^usage: idmint $c "; then
            ok
        else
            bad "idmint $c $h: $(show)"
        fi
    done
    "$BIN" "$c" --help >"$T/help1" 2>&1
    "$BIN" help "$c" >"$T/help2" 2>&1
    check "'idmint help $c' equals '$c --help'" cmp -s "$T/help1" "$T/help2"
    usage_exact "idmint: $c: unknown option '--bogus'" "$c" --key-file "$T/a.key" --bogus 1
    usage_exact "idmint: $c: option '--key-file' needs a value" "$c" --key-file
    usage_exact "idmint: $c: option '--format' needs a value" "$c" 1 --format
done

# ---------------------------------------------------------------- known answers
# The same values as the unit test's (an independent model computed them).

expect_out '8580526688464775992
7297081533020155761
3697951355908787179
8398182892029139375' encrypt --key-file "$T/a.key" --format dec 0 1 2 $MAX
expect_out '7E517HZ1V7ASR' encrypt --key-file "$T/a.key" 0
expect_out '7E517HZ1V7ASR' encrypt --key-file "$T/a.key" --format base32 0
expect_out '7E517HZ1V7ASR' encrypt 0 --key-file="$T/a.key" --format=base32
expect_out 'ADqu09Zcg2q' encrypt --key-file "$T/a.key" --format base62 0
expect_out '0' decrypt --key-file "$T/a.key" 7E517HZ1V7ASR
expect_out '0' decrypt --key-file "$T/a.key" 7e517hz1v7asr
expect_out '0' decrypt --key-file "$T/a.key" --format base62 ADqu09Zcg2q
expect_out '0' decrypt --key-file "$T/a.key" --format dec 8580526688464775992
# Ids in hex are ids too.
expect_out '7E517HZ1V7ASR
7932PV132HPDF' encrypt --key-file "$T/a.key" 0x0 0x7fffffffffffffff

# ---------------------------------------------------------------- round trips

IDS=(0 1 2 3 42 1000 4194304 2006515713438650368 175928847299117063 $MAX)
for _ in $(seq 1 20); do
    IDS+=("$(((RANDOM << 48 | RANDOM << 33 | RANDOM << 18 | RANDOM << 3 | RANDOM & 7) & MAX))")
done
printf '%s\n' "${IDS[@]}" >"$T/ids"
for f in base32 base62 dec; do
    run encrypt --key-file "$T/a.key" --format "$f" "${IDS[@]}"
    cp "$T/out" "$T/enc.$f"
    check "encrypt --format $f: one line per id, exit 0, quiet" \
        test "$RC" -eq 0 -a ! -s "$T/err" -a "$(wc -l <"$T/out")" -eq "${#IDS[@]}"
    case $f in
    base32) re='^[0-9A-HJKMNP-TV-Z]{13}$' ;;
    base62) re='^[0-9A-Za-z]{11}$' ;;
    dec) re='^[0-9]{1,19}$' ;;
    esac
    check "encrypt --format $f: every text matches $re" test "$(grep -Ecv "$re" "$T/out")" -eq 0
    check "encrypt --format $f: distinct texts" test "$(sort -u "$T/out" | wc -l)" -eq "${#IDS[@]}"
    mapfile -t TEXTS <"$T/enc.$f"
    run decrypt --key-file "$T/a.key" --format "$f" "${TEXTS[@]}"
    check "decrypt --format $f gives the ids back" cmp -s "$T/out" "$T/ids"
done
check "dec values stay below 2^63" test "$(awk 'length($0) == 19 && $0 > "9223372036854775807"' "$T/enc.dec" | wc -l)" -eq 0
# Consecutive ids do not give ordered or close opaque ids.
run encrypt --key-file "$T/a.key" $(seq 1000 1099)
check "consecutive ids: opaque texts not in order" test "$RC" -eq 0 -a "$(sort -c "$T/out" 2>/dev/null; echo $?)" -ne 0

# Key file forms: no line end, CRLF, upper case: the same key.
printf '%s' "$KEY_A" >"$T/a-nonl.key"
printf '%s\r\n' "$KEY_A" >"$T/a-crlf.key"
printf '%s\n' "${KEY_A^^}" >"$T/a-upper.key"
for k in a-nonl a-crlf a-upper; do
    expect_out '7E517HZ1V7ASR' encrypt --key-file "$T/$k.key" 0
done
# Another key, another permutation.
run encrypt --key-file "$T/b.key" "${IDS[@]}"
check "another key gives other opaque ids" test "$RC" -eq 0 -a "$(sort "$T/out" "$T/enc.base32" | uniq -d | wc -l)" -eq 0
run decrypt --key-file "$T/b.key" $(cat "$T/enc.base32")
wrong_key_ok() { [ "$RC" -eq 0 ] && ! cmp -s "$T/out" "$T/ids"; }
check "decrypting with the wrong key does not give the ids" wrong_key_ok

# ---------------------------------------------------------------- key file errors

for c in encrypt decrypt; do
    arg=1
    [ "$c" = decrypt ] && arg=0000000000001
    usage_exact "idmint: $c: no --key-file given (try 'idmint $c --help')" "$c" "$arg"
    usage_exact "idmint: $c: cannot open key file '$T/none.key': No such file or directory" \
        "$c" --key-file "$T/none.key" "$arg"
    usage_exact "idmint: $c: bad key file '$T': not a regular file (it is a directory)" "$c" --key-file "$T" "$arg"
    usage_exact "idmint: $c: bad key file '/dev/null': not a regular file (it is a character device)" \
        "$c" --key-file /dev/null "$arg"
done

# A FIFO is refused at once, with or without a writer; it was opened
# blocking and hung until one came. (timeout only ends a hang.)
mkfifo "$T/fifo.key"
for c in encrypt decrypt; do
    arg=1
    [ "$c" = decrypt ] && arg=0000000000001
    timeout 10 "$BIN" "$c" --key-file "$T/fifo.key" "$arg" >"$T/out" 2>"$T/err"
    RC=$?
    check "$c --key-file FIFO: exit 2 at once, one line naming it" \
        test "$RC" -eq 2 -a ! -s "$T/out" -a \
        "$(cat "$T/err")" = "idmint: $c: bad key file '$T/fifo.key': not a regular file (it is a FIFO)"
done
timeout 10 "$BIN" encrypt --key-file <(printf '%s\n' "$KEY_A") 1 >"$T/out" 2>"$T/err"
RC=$?
check "a pipe with a writer (process substitution) is refused too" \
    test "$RC" -eq 2 -a ! -s "$T/out" -a "$(grep -c "not a regular file (it is a FIFO)$" "$T/err")" -eq 1

# bad_key NAME CONTENT EXPECTED-DETAIL: a key file holding CONTENT (printf
# format) is refused with one line ending in EXPECTED-DETAIL, which shows
# nothing of the content.
bad_key() {
    local name=$1 content=$2 detail=$3 c
    # shellcheck disable=SC2059
    printf "$content" >"$T/$name.key"
    for c in encrypt decrypt; do
        fails_with 2 exact "idmint: $c: bad key file '$T/$name.key': $detail" \
            "$c" --key-file "$T/$name.key" 0000000000001
        check "$name key: $c's message shows no key text" no_key_in_err "$(tr -d '\n\0' <"$T/$name.key")"
    done
}
bad_key empty '' 'malformed text (opaque key: empty, need 32 hex digits)'
bad_key newline '\n' 'malformed text (opaque key: empty, need 32 hex digits)'
bad_key short "${KEY_B:0:31}\n" 'malformed text (opaque key: 31 hex digits, need 32 (128 bits))'
bad_key long "${KEY_B}a\n" 'malformed text (opaque key: 33 hex digits, need 32 (128 bits))'
bad_key k256 "$KEY_B$KEY_B\n" 'longer than one line of 32 hex digits'
bad_key nonhex "${KEY_B:0:20}zz${KEY_B:22}\n" 'malformed text (opaque key: character 21 is not a hex digit)'
bad_key prefixed "0x$KEY_B\n" 'malformed text (opaque key: character 2 is not a hex digit)'
bad_key spaced "${KEY_B:0:16} ${KEY_B:16}\n" 'malformed text (opaque key: character 17 is white space)'
bad_key twolines "$KEY_B\n$KEY_A\n" 'longer than one line of 32 hex digits'
bad_key twoshort "${KEY_B:0:16}\n${KEY_B:16}\n" 'malformed text (opaque key: character 17 is a line break)'
bad_key blankline "$KEY_B\n\n" 'malformed text (opaque key: character 33 is a line break)'
bad_key nul "${KEY_B:0:16}\\0${KEY_B:16}\n" 'it holds a NUL byte, not 32 hex digits'
head -c 100000 /dev/zero | tr '\0' 'a' >"$T/big.key"
usage_exact "idmint: encrypt: bad key file '$T/big.key': longer than one line of 32 hex digits" \
    encrypt --key-file "$T/big.key" 1
if [ "$(id -u)" -ne 0 ]; then
    printf '%s\n' "$KEY_B" >"$T/secret.key"
    chmod 000 "$T/secret.key"
    usage_exact "idmint: encrypt: cannot open key file '$T/secret.key': Permission denied" \
        encrypt --key-file "$T/secret.key" 1
fi

# ---------------------------------------------------------------- bad ids and texts

K=(--key-file "$T/a.key")
usage_exact "idmint: encrypt: no ID given (try 'idmint encrypt --help')" encrypt "${K[@]}"
usage_exact "idmint: decrypt: no TEXT given (try 'idmint decrypt --help')" decrypt "${K[@]}"
for c in encrypt decrypt; do
    usage_exact "idmint: $c: bad --format 'hex': use base32, base62 or dec" "$c" "${K[@]}" --format hex 1
    usage_exact "idmint: $c: bad --format 'BASE32': use base32, base62 or dec" "$c" "${K[@]}" --format BASE32 1
done
usage_exact "idmint: encrypt: bad ID '9223372036854775808': above 2^63-1" encrypt "${K[@]}" 9223372036854775808
usage_exact "idmint: encrypt: bad ID '0x8000000000000000': above 2^63-1" encrypt "${K[@]}" 0x8000000000000000
usage_prefix "idmint: encrypt: bad ID '18446744073709551616': value out of range" encrypt "${K[@]}" 18446744073709551616
usage_prefix "idmint: encrypt: bad ID '-1': malformed text" encrypt "${K[@]}" -1
usage_prefix "idmint: encrypt: bad ID 'abc': malformed text" encrypt "${K[@]}" abc
usage_prefix "idmint: encrypt: bad ID '': malformed text" encrypt "${K[@]}" ''
# All arguments are checked before anything is printed.
usage_prefix "idmint: encrypt: bad ID 'x': malformed text" encrypt "${K[@]}" 1 2 x 3
usage_prefix "idmint: decrypt: bad TEXT '7E517HZ1V7ASR!': malformed text" decrypt "${K[@]}" 7E517HZ1V7ASR 7E517HZ1V7ASR!

usage_exact "idmint: decrypt: bad TEXT '': malformed text (opaque: empty text, need 13 base32 characters)" \
    decrypt "${K[@]}" ''
usage_exact "idmint: decrypt: bad TEXT '7E517HZ1V7AS': malformed text (opaque: '7E517HZ1V7AS' has length 12, not 13 (base32))" \
    decrypt "${K[@]}" 7E517HZ1V7AS
usage_exact "idmint: decrypt: bad TEXT 'ADqu09Zcg2q': malformed text (opaque: 'ADqu09Zcg2q' has length 11, not 13 (base32))" \
    decrypt "${K[@]}" ADqu09Zcg2q
usage_exact "idmint: decrypt: bad TEXT '7E517HZ1V7ASU': malformed text (opaque: '7E517HZ1V7ASU' has 'U' at position 13, outside Crockford base32 (no I, L, O or U))" \
    decrypt "${K[@]}" 7E517HZ1V7ASU
usage_exact "idmint: decrypt: bad TEXT '7E517HZ-V7ASR': malformed text (opaque: '7E517HZ-V7ASR' has '-' at position 8, outside Crockford base32)" \
    decrypt "${K[@]}" 7E517HZ-V7ASR
usage_exact "idmint: decrypt: bad TEXT '8000000000000': value out of range (opaque: '8000000000000' is above 7ZZZZZZZZZZZZ (2^63-1))" \
    decrypt "${K[@]}" 8000000000000
usage_exact "idmint: decrypt: bad TEXT 'AzL8n0Y58m8': value out of range (opaque: 'AzL8n0Y58m8' is above AzL8n0Y58m7 (2^63-1))" \
    decrypt "${K[@]}" --format base62 AzL8n0Y58m8
usage_exact "idmint: decrypt: bad TEXT 'ADqu09Zcg_q': malformed text (opaque: 'ADqu09Zcg_q' has '_' at position 10, outside base62 (0-9A-Za-z))" \
    decrypt "${K[@]}" --format base62 ADqu09Zcg_q
usage_exact "idmint: decrypt: bad TEXT '9223372036854775808': above 2^63-1" \
    decrypt "${K[@]}" --format dec 9223372036854775808
expect_out "$MAX" decrypt "${K[@]}" --format base32 "$(sed -n 10p "$T/enc.base32")"

# ---------------------------------------------------------------- output

if [ -w /dev/full ]; then
    "$BIN" encrypt "${K[@]}" 1 >/dev/full 2>"$T/err"
    RC=$?
    full_ok() { [ "$RC" -eq 1 ] && one_err_line; }
    check "encrypt to a full disk: exit 1, one line" full_ok
fi

finish
