#!/usr/bin/env bash
# run_expect.sh — runs command-line tools for ctest and checks what they do.
#
#   run_expect.sh CODE [-o FRAG] [-E FRAG] [-e FRAG]... -- CMD [ARGS...]
#       CMD must exit with status CODE; -o FRAG must occur in its stdout,
#       -E FRAG in its stderr, -e FRAG in either (fixed strings, any number).
#       -O FRAG / -N FRAG: FRAG must NOT occur in stdout / stderr.
#       -f PATH: after the command, PATH must be a non-empty file.
#       -r: no carriage return ('\r', e.g. a progress line) in stdout or stderr.
#   run_expect.sh --same REGEX -- CMD1 [ARGS...] -- CMD2 [ARGS...]
#       both must exit 0 and the parts of their stdout matching the extended
#       regular expression (grep -oE) must be non-empty and equal.
#   run_expect.sh --differ REGEX -- CMD1 ... -- CMD2 ...
#       as --same, but the matched parts must differ.
set -u

fail() {
  echo "run_expect: FAIL: $*" >&2
  exit 1
}

show() { # name file
  echo "---- $1 ----" >&2
  cat "$2" >&2
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/run_expect.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if [ "${1:-}" = "--same" ] || [ "${1:-}" = "--differ" ]; then
  mode=$1
  regex=${2:?missing REGEX}
  shift 2
  [ "${1:-}" = "--" ] || fail "expected -- before the first command"
  shift
  cmd1=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    cmd1+=("$1")
    shift
  done
  [ $# -gt 0 ] || fail "expected -- before the second command"
  shift
  cmd2=("$@")
  [ ${#cmd1[@]} -gt 0 ] && [ ${#cmd2[@]} -gt 0 ] || fail "two commands needed"
  for which in 1 2; do
    if [ $which = 1 ]; then cmd=("${cmd1[@]}"); else cmd=("${cmd2[@]}"); fi
    echo "run_expect: running: ${cmd[*]}"
    "${cmd[@]}" >"$tmp/out$which" 2>"$tmp/err$which"
    rc=$?
    cat "$tmp/out$which"
    if [ $rc -ne 0 ]; then
      show stderr "$tmp/err$which"
      fail "command $which exited with $rc, expected 0: ${cmd[*]}"
    fi
    grep -oE -- "$regex" "$tmp/out$which" >"$tmp/match$which"
    [ -s "$tmp/match$which" ] || fail "command $which printed nothing matching /$regex/"
  done
  if cmp -s "$tmp/match1" "$tmp/match2"; then
    [ "$mode" = "--same" ] || fail "the outputs match /$regex/ identically, expected them to differ"
    echo "run_expect: same: $(tr '\n' ' ' <"$tmp/match1")"
  else
    show "command 1 /$regex/" "$tmp/match1"
    show "command 2 /$regex/" "$tmp/match2"
    [ "$mode" = "--differ" ] || fail "the outputs differ in /$regex/"
    echo "run_expect: differ as expected"
  fi
  echo "run_expect: ok"
  exit 0
fi

want=${1:?usage: run_expect.sh CODE [-o|-E|-e|-O|-N FRAG | -f PATH | -r]... -- CMD [ARGS...]}
shift
checks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    -o | -E | -e | -O | -N | -f)
      [ $# -ge 2 ] || fail "$1 needs a fragment"
      checks+=("$1" "$2")
      shift 2
      ;;
    -r)
      checks+=("$1" "")
      shift
      ;;
    *) fail "unknown argument '$1'" ;;
  esac
done
[ "${1:-}" = "--" ] || fail "expected -- before the command"
shift
[ $# -gt 0 ] || fail "no command"

echo "run_expect: running: $*"
"$@" >"$tmp/out" 2>"$tmp/err"
rc=$?
show stdout "$tmp/out"
show stderr "$tmp/err"
cat "$tmp/out" "$tmp/err" >"$tmp/both"
[ "$rc" -eq "$want" ] || fail "exit status $rc, expected $want"
set -- "${checks[@]+"${checks[@]}"}"
while [ $# -gt 0 ]; do
  case $1 in
    -o) grep -qF -- "$2" "$tmp/out" || fail "stdout lacks '$2'" ;;
    -E) grep -qF -- "$2" "$tmp/err" || fail "stderr lacks '$2'" ;;
    -e) grep -qF -- "$2" "$tmp/both" || fail "output lacks '$2'" ;;
    -O) ! grep -qF -- "$2" "$tmp/out" || fail "stdout has '$2'" ;;
    -N) ! grep -qF -- "$2" "$tmp/err" || fail "stderr has '$2'" ;;
    -f) [ -f "$2" ] && [ -s "$2" ] || fail "no non-empty file $2" ;;
    -r) ! grep -q "$(printf '\r')" "$tmp/both" || fail "the output has a carriage return" ;;
  esac
  shift 2
done
echo "run_expect: ok (exit $rc)"
exit 0
