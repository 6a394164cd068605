# Shared by the tests/cli/*.sh checks (source it first):
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Works in a fresh scratch folder (removed on exit) with one intra-op thread,
# and gives the pass/fail counters, `expect` and `finish`.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export OMP_NUM_THREADS=1
passed=0
failed=0
# free_port: a TCP port nothing on this host holds now, below Linux's
# ephemeral range (32768 on), so no outgoing connection takes it meanwhile.
free_port() {
  python3 -c '
import random, socket
for _ in range(200):
    p = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("free_port: no free port")'
}
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAILED: $1" >&2; }
# How expect matches its pattern: grep options (-F for fixed strings).
expect_grep=(-q)
# expect CODE PATTERN -- command...: exit code and a pattern in stdout+stderr
expect() {
  local code="$1" pattern="$2"
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then
    bad "'$*' exited $rc, expected $code: $(echo "$out" | tail -2)"
  elif [ -n "$pattern" ] && ! grep "${expect_grep[@]}" -- "$pattern" <<<"$out"; then
    bad "'$*' output lacks '$pattern': $(echo "$out" | tail -2)"
  else
    ok
  fi
}
# rank_pid LAUNCHER RANK: the pid of that worker of `slowpipe launch` (empty if none).
rank_pid() {
  local p
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2" && echo "$p"
  done
}
# finish NAME: the counts; the exit status of the script.
finish() {
  echo "$1: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
