#!/usr/bin/env bash
# Simulated time that does not follow the machine (docs/netmodel.md,
# "Compute-time models"):
#  - two identical runs under analytic:A100 give bitwise identical simulated
#    columns (no measured second enters: optimizer and codecs are modelled);
#  - the default model is analytic:RTX4090 (the banner names the device), and
#    the same run twice, once beside two busy loops, gives bitwise identical
#    simulated columns; a run killed and resumed gives the uninterrupted run's;
#  - the host-dependent `calibrated` model: the log holds its `calibration`
#    blob, and once the window has closed every step of the same shape replays
#    the same simulated step time, also across a kill and resume (the
#    calibration travels in the resume checkpoint).
#   tests/cli/test_sim_time.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d)
busy=()
trap 'for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
for i in $(seq 1 200); do echo "line $i: activations cross a slow link, compressed"; done >corpus.txt
base=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
      --set data.name=text --set "data.path=$work/corpus.txt" --set data.limit=96
      --set pipeline.stages=2 --set pipeline.batch_size=8 --set pipeline.microbatches=2
      --set eval.every=0 --set eval.batches=1 --set run.progress=none --fw q4 --bw q8)
fail=0
check() {  # DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fail=1; fi
}
# The simulated-time columns (header included), full precision.
sim_cols() {
  "$bin" export "$1" | awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^sim_/) c[++n] = i }
                                    { s = ""; for (k = 1; k <= n; k++) s = s $c[k] "\t"; print s }'
}
# Distinct sim_step_time_s values of steps > FROM.
step_times_after() {
  "$bin" export "$1" | awk -F'\t' -v from="$2" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
                                                $h["step"] > from { print $h["sim_step_time_s"] }' | sort -u
}

# 1. analytic: bitwise identical twice, with 2 replicas (all-reduce codec) too.
for r in 1 2; do
  for k in a b; do
    grad=(); [ "$r" -gt 1 ] && grad=(--set compress.grad=q8)  # one replica exchanges none
    "$bin" train "${base[@]}" --set run.steps=6 --set pipeline.replicas=$r "${grad[@]}" \
      --set net.compute=analytic:A100 --out "analytic-$r-$k.h5" >/dev/null 2>&1 ||
      { echo "FAILED: analytic run $r-$k"; fail=1; }
  done
  check "analytic:A100, $r replica(s): identical simulated columns in two runs" \
    cmp -s <(sim_cols "analytic-$r-a.h5") <(sim_cols "analytic-$r-b.h5")
  check "analytic:A100, $r replica(s): simulated time > 0" \
    awk -v t="$("$bin" export "analytic-$r-a.h5" --attrs | awk -F'\t' '$1 == "sim_time_s" { print $2 }')" \
    'BEGIN { exit !(t > 0) }'
done

# 2. the default model: analytic on the default device, whatever the load.
"$bin" train "${base[@]}" --set run.steps=8 --set run.progress=plain --out quiet.h5 \
  >/dev/null 2>banner.txt ||
  { echo "FAILED: default run"; fail=1; }
check "the default compute model is analytic:RTX4090" \
  grep -q '^config.net.compute	analytic:RTX4090$' <("$bin" export quiet.h5 --attrs)
check "the banner names the simulated device" grep -q 'simulated device RTX4090' banner.txt
# The same run beside two busy loops (each bounded to 5 minutes, killed after).
for k in 1 2; do
  timeout 300 sh -c 'while :; do :; done' &
  busy+=($!)
done
"$bin" train "${base[@]}" --set run.steps=8 --out busy.h5 >/dev/null 2>&1 ||
  { echo "FAILED: default run beside two busy loops"; fail=1; }
for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done
busy=()
check "default model: identical simulated columns quiet and beside two busy loops" \
  cmp -s <(sim_cols quiet.h5) <(sim_cols busy.h5)
check "default model: the simulated columns are not empty" \
  test "$(sim_cols quiet.h5 | wc -l)" -ge 9
# Killed after step 6 (checkpoint at step 4) and resumed: the uninterrupted run's columns.
(SLOWPIPE_FAULT=step:6 "$bin" train "${base[@]}" --set run.steps=8 --set run.checkpoint_every=4 \
  --out killed.h5 >/dev/null 2>&1) 2>/dev/null
"$bin" train --resume killed.h5 >/dev/null 2>&1 || { echo "FAILED: default resume"; fail=1; }
check "default model: a killed and resumed run has the uninterrupted run's simulated columns" \
  cmp -s <(sim_cols quiet.h5) <(sim_cols killed.h5)
check "default model: the resumed run's sim_time_s attribute equals the uninterrupted run's" \
  test "$("$bin" export killed.h5 --attrs | grep '^sim_time_s')" = \
  "$("$bin" export quiet.h5 --attrs | grep '^sim_time_s')"

# 3. calibrated (host-dependent): over 3 steps, then frozen.
"$bin" train "${base[@]}" --set run.steps=8 --set net.compute=calibrated --out default.h5 \
  >/dev/null 2>&1 || { echo "FAILED: calibrated run"; fail=1; }
check "the calibration blob names the model, the statistic and the classes" \
  grep -q '"model": "calibrated:20:min".*"statistic": "min"' <("$bin" export default.h5 --blob calibration)
check "the calibration blob lists forward, backward, optimizer and send classes" \
  bash -c "b=\$('$bin' export default.h5 --blob calibration); for op in forward backward optimizer send_activation send_gradient; do grep -q \"\\\"op\\\": \\\"\$op\\\"\" <<<\"\$b\" || exit 1; done"
"$bin" train "${base[@]}" --set run.steps=8 --set net.compute=calibrated:3 --out cal.h5 >/dev/null 2>&1 ||
  { echo "FAILED: calibrated:3 run"; fail=1; }
check "calibrated:3: steps 3..8 replay one simulated step time" \
  test "$(step_times_after cal.h5 2 | wc -l)" -eq 1

# 4. calibrated, killed after the window (checkpoint at step 4), resumed: the same step time.
(SLOWPIPE_FAULT=step:6 "$bin" train "${base[@]}" --set run.steps=10 --set net.compute=calibrated:3 \
  --set run.checkpoint_every=4 --out resumed.h5 >/dev/null 2>&1) 2>/dev/null
"$bin" train --resume resumed.h5 >/dev/null 2>&1 || { echo "FAILED: resume"; fail=1; }
check "resumed run complete" grep -q '^status	complete$' <("$bin" export resumed.h5 --attrs)
check "calibrated:3 across a kill and resume: steps 3..10 replay one simulated step time" \
  test "$(step_times_after resumed.h5 2 | wc -l)" -eq 1
exit $fail
