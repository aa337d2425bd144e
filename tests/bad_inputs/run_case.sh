#!/usr/bin/env bash
# Runs one bad-input case: usage: run_case.sh RESHARD SOURCE_DIR CASE_DIR
#
# A case is a directory holding its input files and a file `case`, one directive a line:
#   what: <one line>        what the case shows (documentation only)
#   shell: <bash>           setup step, run in the work directory (may repeat)
#   run: <reshard args>     setup step: a reshard command that must succeed (may repeat)
#   args: <reshard args>    the command under test (exactly one); split on blanks, no quoting
#   expect: <fragment>      must appear in stderr (may repeat: a config with several problems
#                           lists one fragment per problem)
#   keep: <path>            a file that exists before the command and must be byte-identical after
# In shell/run/args/keep, @CASE@ is the case directory and @SRC@ the source root. Everything runs in
# a fresh temporary work directory, which is also where outputs (-o plan.json) go.
#
# The command under test must: exit with status 2 (not a signal, not a hang: killed after 25 s),
# print nothing on stdout, print "reshard: ..." naming every expected fragment on stderr and no
# internal error, and leave the work directory exactly as it was (no output, no *.tmp.* file).
set -u
RESHARD=$1
SRC=$2
CASE_DIR=$(cd "$3" && pwd) || exit 1
NAME=$(basename "$CASE_DIR")
fail() { echo "FAIL [$NAME]: $*" >&2; exit 1; }
[ -f "$CASE_DIR/case" ] || fail "no case file in $CASE_DIR"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
subst() { local s=${1//@CASE@/$CASE_DIR}; printf '%s' "${s//@SRC@/$SRC}"; }
# Listing + checksums of everything under the work directory (names and contents).
snapshot() {
  find . -path ./.case -prune -o -type f -print0 | sort -z | xargs -0r sha256sum
  find . -path ./.case -prune -o -mindepth 1 -print | sort
}

args_line="" expects=() keeps=()
while IFS= read -r line || [ -n "$line" ]; do
  case $line in
    ''|'#'*|what:*) ;;
    shell:*) (eval "$(subst "${line#shell:}")") || fail "setup failed: $line" ;;
    run:*)
      read -ra setup <<<"$(subst "${line#run:}")"
      "$RESHARD" "${setup[@]}" >/dev/null 2>setup_err.txt || { cat setup_err.txt >&2; fail "setup failed: $line"; }
      rm -f setup_err.txt ;;
    args:*) [ -z "$args_line" ] || fail "more than one args line"; args_line=$(subst "${line#args:}") ;;
    expect:*) expects+=("$(echo "${line#expect:}" | sed 's/^ //')") ;;
    keep:*) keeps+=("$(subst "${line#keep:}" | sed 's/^ //')") ;;
    *) fail "unknown directive: $line" ;;
  esac
done <"$CASE_DIR/case"
[ -n "$args_line" ] || fail "no args line"
[ ${#expects[@]} -gt 0 ] || fail "no expect line"
for k in "${keeps[@]}"; do [ -f "$k" ] || fail "keep: $k does not exist before the command"; done

mkdir .case
before=$(snapshot)
read -ra cmd <<<"$args_line"
start=$(date +%s%N)
timeout -s KILL 25 "$RESHARD" "${cmd[@]}" >.case/out 2>.case/err
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
after=$(snapshot)

echo "reshard ${cmd[*]}"
echo "exit $rc after ${ms} ms; stderr:"
cat .case/err
[ "$rc" -ne 137 ] || fail "killed after 25 s: a hang"
[ "$rc" -lt 128 ] || fail "died of signal $((rc - 128))"
[ "$rc" -eq 2 ] || fail "exit $rc, expected 2"
[ ! -s .case/out ] || fail "printed on stdout: $(head -c 300 .case/out)"
head -n 1 .case/err | grep -q '^reshard: ' || fail "stderr does not start with 'reshard: '"
grep -q 'internal error' .case/err && fail "an internal error, not a clear refusal"
for e in "${expects[@]}"; do grep -qF -- "$e" .case/err || fail "stderr lacks '$e'"; done
if [ "$before" != "$after" ]; then
  diff <(echo "$before") <(echo "$after") >&2
  fail "the work directory changed: an output was written or an input modified"
fi
echo "PASS [$NAME]"
