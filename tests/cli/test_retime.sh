#!/usr/bin/env bash
# slowpipe retime (docs/retime.md): a finished run's steps replayed at other
# network settings without training.
#  - At the run's own network the copy's sim_step_time_s (every step),
#    sim_time_s (every step, the eval rows and the attribute) equal the
#    logged ones to 1e-9 relative, for the codecs none, q2, aq(q2) across its
#    fp32 warm-up epoch, topk:0.1 and ef(topk:0.1), two replicas with a
#    compressed all-reduce, and interleaved virtual stages under a fixed clock.
#  - At a faster link (100 Mbit/s -> 1 Gbit/s) every step takes at most its
#    logged time and the run less in all; losses and bytes are copied
#    unchanged; the copy says its network and names its source; and its
#    simulated columns equal those of the same run trained at 1 Gbit/s (q2,
#    aq(q2) with its warm-up, two replicas).
#  - Refusals (exit 2): a host-timed clock (measured, calibrated), a key
#    other than net.*, compress.grad_sync = momentum, no --out, a file that is
#    not a retimed copy in the way.
#   tests/cli/test_retime.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for i in $(seq 1 200); do echo "line $i: activations cross a slow link, compressed"; done >corpus.txt
base=(--set model.layers=4 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
      --set data.name=text --set "data.path=$work/corpus.txt" --set data.limit=48
      --set pipeline.stages=2 --set pipeline.batch_size=8 --set pipeline.microbatches=2
      --set eval.every=3 --set eval.batches=1 --set run.progress=none --set trace.every=4
      --net 100Mbps)
# Column COL of run log LOG, one value a line (full precision), table TABLE.
col() {
  "$bin" export "$1" --table "${3:-train}" |
    awk -F'\t' -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } { print $k }'
}
attr() { "$bin" export "$1" --attrs | awk -F'\t' -v k="$2" '$1 == k { print $2 }'; }
# within A_FILE B_FILE: every line's numbers agree to 1e-9 relative (and the counts match).
within() {
  [ "$(wc -l <"$1")" -eq "$(wc -l <"$2")" ] && [ "$(wc -l <"$1")" -gt 0 ] &&
    paste "$1" "$2" | awk '{ d = $1 - $2; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2;
                              if (d > 1e-9 * m) bad = 1 } END { exit bad }'
}
# not_slower NEW OLD: every line of NEW at most OLD's, and the sums differ.
not_slower() {
  paste "$1" "$2" | awk '{ if ($1 > $2) bad = 1; a += $1; b += $2 } END { exit bad || !(a < b) }'
}
train() {  # NAME ARGS...: one tiny run
  local name="$1"
  shift
  "$bin" train "${base[@]}" "$@" --out "$name.h5" >/dev/null 2>&1 || bad "training $name"
}
train none --fw none --bw none --set run.steps=6
train q2 --fw q2 --bw q8 --set run.steps=6
train aq --fw 'aq(q2)' --bw q8 --set run.epochs=2  # epoch 0 sends fp32
train topk --fw topk:0.1 --bw topk:0.1 --set run.steps=6
train ef --fw 'ef(topk:0.1)' --bw 'ef(topk:0.1)' --set run.steps=6
train replicas --fw q4 --bw q8 --set pipeline.replicas=2 --set compress.grad=q8 \
  --set pipeline.schedule=gpipe --set run.steps=4
train interleaved --fw q4 --bw q8 --set pipeline.schedule=interleaved \
  --set pipeline.virtual_stages=2 --set net.compute=fixed:0.01/0.02 --set run.steps=4
runs=(none q2 aq topk ef replicas interleaved)
[ "$(col aq.h5 fw0_bytes | sort -u | wc -l)" -eq 2 ] && ok ||
  bad "aq(q2): fp32 warm-up then compressed messages (two message sizes in the log)"

for r in "${runs[@]}"; do
  expect 0 "reproduced to" -- "$bin" retime "$r.h5" --out own
  for c in sim_step_time_s sim_time_s; do
    col "$r.h5" $c >a.txt
    col "own/$r.h5" $c >b.txt
    within b.txt a.txt && ok || bad "$r: retimed at its own network, $c differs from the log"
  done
  col "$r.h5" sim_time_s eval >a.txt
  col "own/$r.h5" sim_time_s eval >b.txt
  within b.txt a.txt && ok || bad "$r: own network, eval sim_time_s differs"
  attr "$r.h5" sim_time_s >a.txt
  attr "own/$r.h5" sim_time_s >b.txt
  within b.txt a.txt && ok || bad "$r: own network, the sim_time_s attribute differs"
  expect 0 "" -- "$bin" retime "$r.h5" --set net.bandwidth=1Gbps --out fast
  col "fast/$r.h5" sim_step_time_s >b.txt
  col "$r.h5" sim_step_time_s >a.txt
  not_slower b.txt a.txt && ok || bad "$r: at 1 Gbit/s a step is slower, or the run is not faster"
  for c in loss fw0_bytes bw0_bytes; do
    cmp -s <(col "$r.h5" $c) <(col "fast/$r.h5" $c) && ok || bad "$r: $c not copied unchanged"
  done
  [ "$(attr "fast/$r.h5" config.net.bandwidth)" = 1Gbps ] && ok || bad "$r: config.net.bandwidth"
  [ "$(attr "fast/$r.h5" retime.source)" = "$work/$r.h5" ] && ok || bad "$r: retime.source"
  "$bin" export "fast/$r.h5" --blob trace_step_4 | grep -q '"bytes"' && ok ||
    bad "$r: the kept step trace is rewritten"
done
# The reference: the same runs trained at 1 Gbit/s have the retimed copies' simulated columns.
for r in q2 aq replicas; do
  args=(--fw q2 --bw q8 --set run.steps=6)
  [ $r = aq ] && args=(--fw 'aq(q2)' --bw q8 --set run.epochs=2)
  [ $r = replicas ] && args=(--fw q4 --bw q8 --set pipeline.replicas=2 --set compress.grad=q8
                             --set pipeline.schedule=gpipe --set run.steps=4)
  train "trained-$r" "${args[@]}" --set net.bandwidth=1Gbps
  for c in sim_step_time_s sim_time_s; do
    col "trained-$r.h5" $c >a.txt
    col "fast/$r.h5" $c >b.txt
    within b.txt a.txt && ok || bad "$r: retimed to 1 Gbit/s, $c differs from a run trained there"
  done
done
# A folder, and the copies beside the originals in summary (two bandwidths).
expect 0 "" -- "$bin" retime own --set net.latency=50ms --out slow
expect 0 "1Gbps" -- "$bin" summary none.h5 fast/none.h5 --no-group --tsv

# Refusals.
train measured --set net.compute=measured --set run.steps=2
train calibrated --set net.compute=calibrated --set run.steps=2
train momentum --set pipeline.replicas=2 --set compress.grad_sync=momentum --set run.steps=2
expect 2 "net.compute = measured" -- "$bin" retime measured.h5 --out x
expect 2 "net.compute = calibrated" -- "$bin" retime calibrated.h5 --out x
expect 2 "momentum" -- "$bin" retime momentum.h5 --out x
expect 2 "net.* keys" -- "$bin" retime q2.h5 --set model.layers=2 --out x
expect 2 "machine-independent" -- "$bin" retime q2.h5 --set net.compute=measured --out x
expect 2 "--out DIR is required" -- "$bin" retime q2.h5
expect 2 "no such run log" -- "$bin" retime missing.h5 --out x
expect 2 "two run logs named q2.h5" -- "$bin" retime q2.h5 own/q2.h5 --out y
[ ! -e y ] && ok || bad "a refused retime created its --out folder"
mkdir -p taken && cp none.h5 taken/q2.h5
expect 2 "not a retimed copy" -- "$bin" retime q2.h5 --out taken
expect 0 "" -- "$bin" retime q2.h5 --out fast  # its own earlier copy is replaced
finish test_retime
