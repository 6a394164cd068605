#!/usr/bin/env bash
# shaped-net-selftest.sh: check that scripts/shaped-net.sh builds the network
# slowpipe's model assumes (docs/shaped-net.md). Root only. Three ranks:
#   plumbing  environment, {rank} substitution, output prefixes, exit status
#   rtt       application-level TCP round trip over a link (and over loopback)
#   (a)       a lone transfer 0->1 takes bytes / (rate x 0.9564)
#   (b)       two flows 0->1 share that link equally (same start, staggered)
#   (c)       flows 0->1 and 0->2 do not share: each pair has its own link
# Prints a table; exits 1 when (a) is off by more than 2% (median of 5
# transfers), when (b) is unfair (slower flow under 0.8x the faster one) or
# when (c) shows sharing (a flow under 0.75x the link's payload rate).
set -euo pipefail

PROG=${0##*/}
readonly PROG
HERE=$(cd "$(dirname "$0")" && pwd)
readonly HERE
readonly EFFICIENCY=0.9564

usage() {
  cat <<EOF
Usage: $PROG [--rate RATE] [--size MIB] [--fair MODE] [--port P]

Runs 3 ranks under scripts/shaped-net.sh and measures: a lone transfer of
MIB MiB (default 25) from rank 0 to rank 1 (five times), two concurrent
transfers from rank 0 to rank 1 (started together, and the second one late),
concurrent transfers from rank 0 to ranks 1 and 2, and the TCP round trip
time between two ranks. Must be run as root.

Options:
  --rate RATE  link rate, as shaped-net.sh takes it (default 100mbit)
  --size MIB   size of each transfer in MiB (default 25)
  --fair MODE  passed to shaped-net.sh (default auto); --fair fifo shows
               what a plain FIFO does to (b)
  --port P     MASTER_PORT (default 29500); the test servers use P+1
  -h, --help   show this help

Exit status: 0 when every check passes, 1 when one fails or the run fails,
2 on bad arguments.
EOF
}

bad_usage() {
  echo "$PROG: $*" >&2
  echo "Try '$PROG --help'." >&2
  exit 2
}

RATE=100mbit
SIZE_MIB=25
FAIR=auto
PORT=29500
while (($# > 0)); do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --rate | --size | --fair | --port)
      (($# >= 2)) || bad_usage "option $1 needs a value"
      case $1 in
        --rate) RATE=$2 ;;
        --size) SIZE_MIB=$2 ;;
        --fair) FAIR=$2 ;;
        --port) PORT=$2 ;;
      esac
      shift 2
      ;;
    *) bad_usage "unexpected argument '$1'" ;;
  esac
done
if ! [[ $SIZE_MIB =~ ^[0-9]+$ ]] || ((10#$SIZE_MIB < 1 || 10#$SIZE_MIB > 1024)); then
  bad_usage "--size must be an integer number of MiB from 1 to 1024"
fi
if ! [[ $PORT =~ ^[0-9]+$ ]] || ((10#$PORT < 1 || 10#$PORT > 65534)); then
  bad_usage "--port must be an integer from 1 to 65534"
fi
case $FAIR in
  auto | fq | buckets | fifo) ;;
  *) bad_usage "--fair must be auto, fq, buckets or fifo, got '$FAIR'" ;;
esac

RATE_BPS=$(awk -v s="$RATE" 'BEGIN {
  if (match(s, /^[0-9]+(\.[0-9]+)?/)) { n = substr(s, 1, RLENGTH); u = tolower(substr(s, RLENGTH + 1)) }
  m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9; m["tbit"] = 1e12
  sub(/\/s$/, "", u)
  if (u in m) printf "%.0f\n", n * m[u]; else print "bad" }')
[[ $RATE_BPS != bad ]] || bad_usage "--rate '$RATE' is not a bit rate (examples: 100mbit, 1gbit)"
SIZE=$((SIZE_MIB * 1024 * 1024))

if ((EUID != 0)); then
  echo "$PROG: error: must be run as root (it runs scripts/shaped-net.sh)" >&2
  exit 1
fi
command -v python3 >/dev/null 2>&1 || {
  echo "$PROG: error: python3 not found" >&2
  exit 1
}
# The interpreter itself, not a version-manager shim, so that every rank
# starts it directly inside its namespace.
PY=$(python3 -c 'import sys; print(sys.executable)')

TMP=$(mktemp -d /tmp/shaped-net-selftest.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# ------------------------------------------------------------------ plumbing
# shellcheck disable=SC2016  # expanded by the ranks' sh
if "$HERE/shaped-net.sh" --nproc 2 --rate "$RATE" --fair "$FAIR" --port "$PORT" -- \
  sh -c 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT $GLOO_SOCKET_IFNAME $0"; echo "err $RANK" >&2; exit $((RANK + 3))' \
  'tag{rank}' >"$TMP/plumb.out" 2>"$TMP/plumb.err"; then
  PLUMB_RC=0
else
  PLUMB_RC=$?
fi
PLUMB=ok
grep -qxE "\[rank 0\] 0 0 2 10\.[0-9]+\.0\.1 $PORT sprank tag0" "$TMP/plumb.out" || PLUMB=FAIL
grep -qxE "\[rank 1\] 1 1 2 10\.[0-9]+\.0\.1 $PORT sprank tag1" "$TMP/plumb.out" || PLUMB=FAIL
grep -qx "\[rank 1\] err 1" "$TMP/plumb.err" || PLUMB=FAIL
((PLUMB_RC == 3)) || PLUMB=FAIL
if [[ $PLUMB != ok ]]; then
  echo "$PROG: plumbing check failed (exit status $PLUMB_RC, expected 3); output:" >&2
  cat "$TMP/plumb.out" "$TMP/plumb.err" >&2
fi

# -------------------------------------------------------------- rank program
# Ranks 1 and 2 serve; rank 0 drives every experiment and then stops them.
# Each writes a JSON file; the analysis below reads them.
cat >"$TMP/rank.py" <<'EOF'
import json, os, socket, statistics, struct, sys, threading, time

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
port = int(os.environ["MASTER_PORT"]) + 1
out, size, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
net = os.environ["MASTER_ADDR"].rsplit(".", 1)[0]
addr = lambda r: "%s.%d" % (net, r + 1)  # shaped-net.sh's address plan
HDR = struct.Struct("!4sdQ16s")  # kind, t0 (client monotonic), total bytes, label
lone = size * 8 / (rate * 0.9564)  # predicted seconds of a lone transfer
LONE_RUNS = 5

def recv_exact(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b

def echo(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        d = c.recv(1)
        if not d:
            return
        c.sendall(d)

def serve():
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr(rank), port))
    ls.listen(16)
    ls.settimeout(300)
    flows = []

    def handle(c):
        try:
            hdr = recv_exact(c, HDR.size)
        except (EOFError, OSError):  # rank 0 probing whether we are up
            c.close()
            return
        kind, t0, total, label = HDR.unpack(hdr)
        if kind == b"PING":
            echo(c)
        elif kind == b"FLOW":
            buf = memoryview(bytearray(1 << 18))
            got = HDR.size
            samples = [(time.monotonic(), got)]
            while got < total:
                n = c.recv_into(buf, min(len(buf), total - got))
                if n == 0:
                    break
                got += n
                samples.append((time.monotonic(), got))
            flows.append(dict(label=label.rstrip(b"\0").decode(), t0=t0,
                              bytes=got, samples=samples))
            c.sendall(b"k")
        c.close()

    while True:
        c, _ = ls.accept()
        kind = c.recv(4, socket.MSG_PEEK | socket.MSG_WAITALL)
        if kind == b"QUIT":
            json.dump(dict(rank=rank, flows=flows), open(out, "w"))
            c.sendall(b"k")
            c.close()
            return
        threading.Thread(target=handle, args=(c,), daemon=True).start()

def connect(r):
    deadline = time.monotonic() + 30
    while True:
        try:
            return socket.create_connection((addr(r), port), timeout=120)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)

def rtt(host, p, rounds=2000):
    c = socket.create_connection((host, p))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if p == port:
        c.sendall(HDR.pack(b"PING", 0, 0, b""))
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        c.sendall(b"x")
        recv_exact(c, 1)
        ts.append(time.perf_counter() - t)
    c.close()
    ts = sorted(ts[rounds // 10:])  # drop the warm-up
    return dict(min=ts[0], median=statistics.median(ts), p90=ts[len(ts) * 9 // 10])

def flows(specs):
    """specs: [(dst rank, label, start delay in s)]; all connect first."""
    conns = [(connect(d), label, delay) for d, label, delay in specs]
    payload = memoryview(bytearray(size - HDR.size))
    start = time.monotonic() + 0.05

    def send(c, label, delay):
        while time.monotonic() < start + delay:
            time.sleep(0.0002)
        c.sendall(HDR.pack(b"FLOW", time.monotonic(), size, label.encode()))
        c.sendall(payload)
        recv_exact(c, 1)
        c.close()

    ts = [threading.Thread(target=send, args=x) for x in conns]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    time.sleep(0.2)

def drive():
    for r in range(1, world):
        connect(r).close()  # wait for the servers
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    threading.Thread(target=lambda: echo(ls.accept()[0]), daemon=True).start()
    res = dict(rtt_loopback=rtt("127.0.0.1", ls.getsockname()[1]),
               rtt_link=rtt(addr(1), port))
    for k in range(LONE_RUNS):
        flows([(1, "a%d" % k, 0)])
    flows([(1, "b-1", 0), (1, "b-2", 0)])
    flows([(1, "b2-1", 0), (1, "b2-2", 0.3 * lone)])
    flows([(1, "c-01", 0), (2, "c-02", 0)])
    for r in range(1, world):
        c = connect(r)
        c.sendall(HDR.pack(b"QUIT", 0, 0, b""))
        recv_exact(c, 1)
        c.close()
    json.dump(res, open(out, "w"))

drive() if rank == 0 else serve()
EOF


RUN_RC=0
"$HERE/shaped-net.sh" --nproc 3 --rate "$RATE" --fair "$FAIR" --port "$PORT" -- \
  "$PY" "$TMP/rank.py" "$TMP/rank{rank}.json" "$SIZE" "$RATE_BPS" || RUN_RC=$?
if ((RUN_RC != 0)); then
  echo "$PROG: the measurement run failed (shaped-net.sh exit status $RUN_RC)" >&2
  exit 1
fi

# ------------------------------------------------------------------ analysis
"$PY" - "$TMP" "$RATE" "$RATE_BPS" "$SIZE" "$EFFICIENCY" "$PLUMB" <<'EOF'
import bisect, json, statistics, sys

tmp, rate_arg, rate, size, eff, plumb = sys.argv[1:]
rate, size, eff = float(rate), int(size), float(eff)
r0 = json.load(open(tmp + "/rank0.json"))
fl = {}
for r in (1, 2):
    for f in json.load(open("%s/rank%d.json" % (tmp, r)))["flows"]:
        fl[f["label"]] = f
payload = rate * eff  # bit/s
pred = size * 8 / payload
ok = {"plumbing": plumb == "ok"}

def at(samples, t):  # bytes received by time t
    i = bisect.bisect_right([s[0] for s in samples], t)
    return samples[max(i - 1, 0)][1]

def overlap(labels):  # Mbit/s of each flow while all were receiving
    fs = [fl[l] for l in labels]
    lo = max(f["samples"][0][0] for f in fs)
    hi = min(f["samples"][-1][0] for f in fs)
    return hi - lo, [(at(f["samples"], hi) - at(f["samples"], lo)) * 8 / (hi - lo) for f in fs]

print()
print("shaped-net selftest: 3 ranks, %s links (%.0f bit/s), payload rate rate x %.4f = %.2f Mbit/s, transfers of %d bytes"
      % (rate_arg, rate, eff, payload / 1e6, size))
print("plumbing (env, {rank}, prefixes, exit status): %s" % plumb)
lb, ln = r0["rtt_loopback"], r0["rtt_link"]
print("TCP round trip (1-byte ping-pong, Python, min/median/p90): link 0<->1 %.1f/%.1f/%.1f us, loopback %.1f/%.1f/%.1f us"
      % tuple(x * 1e6 for x in (ln["min"], ln["median"], ln["p90"], lb["min"], lb["median"], lb["p90"])))
print()
print("%-4s %-34s %10s %10s %9s  %s" % ("test", "flow", "seconds", "predicted", "error", ""))
errs = []
for k in range(5):
    f = fl["a%d" % k]
    secs = f["samples"][-1][0] - f["t0"]
    errs.append(secs / pred - 1)
    print("%-4s %-34s %10.4f %10.4f %+8.3f%%" % ("a", "lone 0->1, run %d" % (k + 1), secs, pred, 100 * errs[-1]))
med = statistics.median(errs)
ok["a"] = abs(med) <= 0.02
print("%-4s %-34s %10s %10s %+8.3f%%  %s (median within 2%%; %d of %d runs within 2%%)"
      % ("a", "median", "", "", 100 * med, "ok" if ok["a"] else "FAIL", sum(abs(e) <= 0.02 for e in errs), len(errs)))
print()
print("%-4s %-34s %12s %14s  %s" % ("test", "flows (rates while all active)", "Mbit/s", "of payload rate", ""))
for tag, labels, what in (("b", ["b-1", "b-2"], "0->1 twice, same start"),
                          ("b", ["b2-1", "b2-2"], "0->1 twice, 2nd 30% later")):
    secs, rs = overlap(labels)
    fair = min(rs) / max(rs)
    good = fair >= 0.8
    ok[tag] = ok.get(tag, True) and good
    for l, r in zip(labels, rs):
        print("%-4s %-34s %12.2f %13.1f%%" % (tag, "%s: %s" % (what, l), r / 1e6, 100 * r / payload))
    print("%-4s %-34s %12.2f %13.1f%%  %s (slower/faster %.2f over %.2f s)"
          % (tag, "  sum", sum(rs) / 1e6, 100 * sum(rs) / payload, "ok" if good else "UNFAIR", fair, secs))
secs, rs = overlap(["c-01", "c-02"])
ok["c"] = min(rs) >= 0.75 * payload
for l, r in zip(["0->1", "0->2"], rs):
    print("%-4s %-34s %12.2f %13.1f%%" % ("c", "concurrent " + l, r / 1e6, 100 * r / payload))
print("%-4s %-34s %12s %14s  %s (each flow >= 75%% of the payload rate, over %.2f s)"
      % ("c", "", "", "", "ok" if ok["c"] else "SHARED", secs))
print()
bad = [k for k, v in ok.items() if not v]
print("RESULT: %s" % ("PASS" if not bad else "FAIL (" + ", ".join(bad) + ")"))
sys.exit(1 if bad else 0)
EOF
