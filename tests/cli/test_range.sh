#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Tests of `idmint range` on layouts that use the sign bit, and of the
# message when a command's output cannot be written.
#
# range prints unsigned bounds; when they pass 2^63-1 it warns on stderr
# (one line, exit 0, stdout unchanged) that signed 64-bit columns cannot
# hold them and gives the condition for ids kept in such a column by their
# bits (the id minus 2^64), checked here against python3's arithmetic. Below
# 2^63 it says nothing. A command whose output cannot be written (/dev/full)
# fails with exit 1 and one line that gives the reason.
#
# Usage: bash test_range.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

need python3

# signed V: V (unsigned 64-bit) as a signed 64-bit column holds its bits.
signed() { python3 -c 'import sys; v = int(sys.argv[1]); print(v - 2**64 if v >= 2**63 else v)' "$1"; }

# warned_exact LINE ARGS...: exit 0, stdout the two usual lines, stderr
# exactly LINE.
warned_exact() {
    local want=$1
    shift
    run "$@"
    if [ "$RC" -eq 0 ] && one_err_line && [ "$(cat "$T/err")" = "$want" ] &&
        [ "$(grep -Ecx 'min=[0-9]+ max=[0-9]+|WHERE id BETWEEN [0-9]+ AND [0-9]+' "$T/out")" -eq 2 ]; then
        ok
    else
        bad "idmint $*: want exit 0 and the warning [$want]; $(show)"
    fi
}

# ---------------------------------------------------------------- sign bit

# Instagram's ids (41 bits of ms, 13 + 10 more) pass 2^63-1 from
# 2046-06-27T17:00:49.497Z; Discord's (42 bits) from 2084-09-06T15:47:35.552Z.
IG_FROM=2046-06-27T17:00:49.497Z
DC_FROM=2084-09-06T15:47:35.552Z
SIGNED_MSG="a signed 64-bit column (PostgreSQL bigint, Java long) cannot hold"
KEEP_MSG="keep such ids in a numeric(20) column, where the bounds work as printed, or, if they are stored in a signed column by their bits (the id minus 2^64), select them with"

# A window wholly above 2^63-1: both bounds, shifted by 2^64.
LO=9359116076299845632
HI=9359840852031045631
warned_exact "idmint: range: warning: min and max are above 2^63-1, as are the ids of layout instagram from $IG_FROM: $SIGNED_MSG them; $KEEP_MSG WHERE id BETWEEN $(signed $LO) AND $(signed $HI)" \
    range --layout instagram 2047-01-01 2047-01-02
check "the stdout of a warned range is the usual one" \
    test "$(cat "$T/out")" = "min=$LO max=$HI
WHERE id BETWEEN $LO AND $HI"
check "the signed bounds are negative and in order" \
    test "$(signed $LO)" -lt "$(signed $HI)" -a "$(signed $HI)" -lt 0

# A window across 2^63: the unsigned part and the negative part.
LO=9223372032685637632
HI=9223372041074245631
warned_exact "idmint: range: warning: max is above 2^63-1, as are the ids of layout instagram from $IG_FROM: $SIGNED_MSG it; $KEEP_MSG WHERE id >= $LO OR id <= $(signed $HI)" \
    range --layout instagram 2046-06-27T17:00:49Z 2046-06-27T17:00:50Z
check "a window across 2^63: min below it, max above" \
    test "$(python3 -c "print($LO < 2**63 <= $HI)")" = True

# Ending exactly where the sign bit starts: max is 2^63-1, no warning.
expect_out 'min=9223372024297029632 max=9223372036854775807
WHERE id BETWEEN 9223372024297029632 AND 9223372036854775807' \
    range --layout instagram 2046-06-27T17:00:48Z "$IG_FROM"
# Starting there: warned.
run range --layout instagram "$IG_FROM" 2046-06-27T17:00:49.498Z
check "a window from the first negative ms is warned" \
    test "$RC" -eq 0 -a "$(grep -c "^idmint: range: warning: min and max are above 2^63-1" "$T/err")" -eq 1

# Discord: nothing before 2084, a warning after; --json keeps its stdout.
run range --layout discord 2026-01-01 2026-01-02
check "discord in 2026: no warning" test "$RC" -eq 0 -a ! -s "$T/err"
run range --layout discord 2090-01-01 2090-01-02 --json
check "discord in 2090 --json: one JSON line on stdout, the warning on stderr" \
    test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -eq 1 \
    -a "$(python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(int(j["min"]) >= 2**63)' "$T/out")" = True \
    -a "$(grep -c "^idmint: range: warning: min and max are above 2^63-1, as are the ids of layout discord from $DC_FROM: " "$T/err")" -eq 1
# A layout without the sign bit never warns, even at the end of its time.
run range --layout twitter 2079-01-01 2079-01-02
check "twitter (63 bits) at the end of its time: no warning" test "$RC" -eq 0 -a ! -s "$T/err"

# ---------------------------------------------------------------- output errors

if [ ! -w /dev/full ]; then
    bad "no writable /dev/full to test output errors with"
else
    FULL="cannot write the output: No space left on device"
    for args in "range 2026-01-01 2026-01-02" "--version" "--help" "help range" "layout twitter" \
        "range --layout instagram 2047-01-01 2047-01-02 --json"; do
        # shellcheck disable=SC2086
        "$BIN" $args >/dev/full 2>"$T/err"
        RC=$?
        cmd=${args%% *}
        case $cmd in --*) prefix="idmint:" ;; help) prefix="idmint: range:" ;; *) prefix="idmint: $cmd:" ;; esac
        check "idmint $args to a full disk: exit 1, the reason on the last line ($(cat "$T/err"))" \
            test "$RC" -eq 1 -a "$(tail -n 1 "$T/err")" = "$prefix $FULL"
    done
fi

finish
