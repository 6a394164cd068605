#!/usr/bin/env bash
# Bitwise resume after SIGKILL (scripts/kill-resume.sh) for the four channel
# set-ups the reliability guarantee names: fp32, aq(q2) with a disk store,
# ef(topk:0.1) with 2 replicas, and q2:stochastic; and the Muon optimizer
# (docs/optimizers.md), whose state the checkpoint holds; and run.dtype = bf16
# timed by the shaped clock (docs/compute-clock.md). Each: KILLS kills (default
# 10) at random points and at chosen ones (mid-checkpoint, mid-evaluation, after
# a step). ctest runs it twice: test_resume with 4 kills per set-up (the default
# suite) and test_resume_long with 10 (label `long`, make test-long).
#   tests/cli/test_resume.sh PATH/TO/slowpipe SOURCE_DIR [KILLS]
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src="$2"
kills="${3:-10}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1
for i in $(seq 1 400); do echo "pipeline stage $i sends compressed activations over a slow link"; done >corpus.txt
mkdir aq
base=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
      --set model.dropout=0.1
      --set data.name=text --set "data.path=$work/corpus.txt" --set data.limit=128
      --set pipeline.stages=2 --set pipeline.batch_size=8 --set pipeline.microbatches=2
      --set run.steps=60 --set eval.every=8 --set eval.batches=2
      --set run.checkpoint_every=5 --set net.compute=fixed:0.01 --set net.jitter=1ms)
total_pass=0
total_fail=0
run_case() {  # NAME options...
  local name="$1"
  shift
  local out
  out=$(bash "$src/scripts/kill-resume.sh" -n "$kills" -s 7 "$bin" -- "${base[@]}" "$@" 2>&1)
  echo "$out" | sed "s/^/[$name] /"
  local line
  line=$(echo "$out" | tail -1)
  total_pass=$((total_pass + $(echo "$line" | awk '{print $1}')))
  total_fail=$((total_fail + $(echo "$line" | awk '{print $3}')))
  if ! echo "$line" | grep -q "passed"; then total_fail=$((total_fail + 1)); fi
}
run_case fp32 --fw none --bw none
run_case aq-disk --fw 'aq(q2)' --bw q4 --set compress.aq_store=disk --set "compress.aq_dir=$work/aq" \
  --set compress.aq_warmup_epochs=1
run_case ef-topk-2rep --fw 'ef(topk:0.1)' --bw q8 --set pipeline.replicas=2 --set compress.grad=q8
run_case q2-stochastic --fw q2:stochastic --bw q4:stochastic
run_case muon --fw q8 --bw q8 --set optim.name=muon --set optim.lr=0.02 \
  --set optim.schedule=stable-linear
run_case bf16-shaped --fw q8 --bw q8 --set run.dtype=bf16 --set net.compute=shaped:A100
echo "resume: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
