# SPDX-License-Identifier: MIT
#
# Check helpers shared by the CLI test scripts (tests/cli/test_*.sh). Not a
# test itself: each script sources it right after `set -u` with
#
#     source "$(dirname "$0")/lib.sh"
#
# while its own arguments ($1 = the idmint binary) are still in place.
# Sourcing it sets BIN, PASS and FAIL, stops the script with "0 passed,
# 1 failed" if no executable binary was given, makes the temporary directory
# $T (removed on exit; a script that needs more cleanup replaces the EXIT
# trap with its own, which must also remove $T), exports LC_ALL=C and
# defines the helpers below.
#
# Settings a script may give before sourcing:
#   FAIL_FD   the file descriptor `bad` writes to (default 2, stderr); the
#             lease scripts use 3, a copy of stderr that stays visible where
#             the shell's own stderr is muted (lib_lease.sh opens it for them).
#   SHOW_ERR  how many bytes of stderr `show` prints (default: all of it).

BIN=${1:-}
PASS=0
FAIL=0

if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "${0##*/}: no idmint binary given or not executable: '$BIN'" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
export LC_ALL=C

# ok: count one passed check.
ok() { PASS=$((PASS + 1)); }
# bad MESSAGE...: count one failed check and print "FAIL: MESSAGE" to FAIL_FD.
bad() {
    FAIL=$((FAIL + 1))
    printf 'FAIL: %s\n' "$*" >&"${FAIL_FD:-2}"
}
check() { # check DESCRIPTION COMMAND...: passes if COMMAND succeeds
    local desc=$1
    shift
    if "$@"; then ok; else bad "$desc"; fi
}
# finish: print the summary line "N passed, N failed" and exit, non-zero if
# any check failed or none passed.
finish() {
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ] && [ "$PASS" -gt 0 ]
    exit $?
}

# need TOOL...: the tools a script uses besides idmint, each on PATH. They
# are dependencies (scripts/deps.sh installs python3; flock, script and
# timeout come with every Debian system), so a missing one fails the script
# with a message that names it: checks are never skipped for want of a
# tool. Call it right after sourcing this file.
need() {
    local t missing=()
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || missing+=("$t")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    bad "${0##*/}: not on PATH: ${missing[*]} (dependencies: scripts/deps.sh or a base Debian system provides them); no check was run"
    finish
}

# run ARGS...: run idmint; stdout in $T/out, stderr in $T/err, status in RC.
run() {
    "$BIN" "$@" >"$T/out" 2>"$T/err"
    RC=$?
}
# show: the last run's status, the start of its stdout and its stderr (all
# of it, or the first SHOW_ERR bytes), for a failure message.
show() {
    local err
    if [ -n "${SHOW_ERR:-}" ]; then err=$(head -c "$SHOW_ERR" "$T/err"); else err=$(cat "$T/err"); fi
    printf 'rc=%s stdout=[%s] stderr=[%s]' "$RC" "$(head -c 300 "$T/out")" "$err"
}
# ends_nl FILE: FILE's last byte is a newline.
ends_nl() { [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ]; }
# one_err_line: the last run's stderr is exactly one newline-ended line.
one_err_line() { [ "$(wc -l <"$T/err")" -eq 1 ] && ends_nl "$T/err"; }

# The checks below are those of test_cli.sh and test_ids128.sh. The lease
# scripts source lib_lease.sh instead, whose fails_with (STATUS TEXT
# ARGS...) replaces this one; they do not use expect_out or usage_*.

# expect_out EXPECTED ARGS...: exit 0, stdout exactly EXPECTED (plus a final
# newline), stderr empty.
expect_out() {
    local want=$1
    shift
    run "$@"
    if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && printf '%s\n' "$want" | cmp -s - "$T/out"; then
        ok
    else
        bad "idmint $*: want [$want]; $(show)"
    fi
}

# fails_with STATUS MODE MESSAGE ARGS...: exit STATUS, nothing on stdout and
# exactly one stderr line that equals MESSAGE (MODE exact) or starts with it
# (MODE prefix).
fails_with() {
    local status=$1 mode=$2 msg=$3
    shift 3
    run "$@"
    failed_with "$status" "$mode" "$msg" "idmint $*"
}
# failed_with STATUS MODE MESSAGE DESCRIPTION: the check of fails_with on
# the run already made (RC, $T/out, $T/err), for runs that `run` cannot
# make (in the background, say); DESCRIPTION names it in the failure.
failed_with() {
    local status=$1 mode=$2 msg=$3 desc=$4 line
    line=$(head -n 1 "$T/err")
    if [ "$RC" -eq "$status" ] && [ ! -s "$T/out" ] && one_err_line &&
        { { [ "$mode" = exact ] && [ "$line" = "$msg" ]; } ||
          { [ "$mode" = prefix ] && [ "${line#"$msg"}" != "$line" ]; }; }; then
        ok
    else
        bad "$desc: want exit $status and stderr ($mode) [$msg]; $(show)"
    fi
}
# usage_exact MESSAGE ARGS...: a usage error (exit 2) whose one stderr line
# is exactly MESSAGE.
usage_exact() { fails_with 2 exact "$@"; }
# usage_prefix MESSAGE ARGS...: a usage error (exit 2) whose one stderr line
# starts with MESSAGE.
usage_prefix() { fails_with 2 prefix "$@"; }
