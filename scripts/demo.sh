#!/usr/bin/env bash
# The default experiment (`make demo`): pretrain a small byte-level GPT on GCIDE,
# then fine-tune it on a distinct text cut into 4 pipeline stages over a
# simulated 100 Mbit/s network, three ways, as one sweep
# (experiments/sweeps/demo.ini): fp32, direct 2-bit activations and AQ-SGD
# 2-bit activations (4-bit activation-gradients for both). Writes
# results/demo/finetune/: one run log per point, summary.md, plots/*.png, and a
# Chrome/Perfetto timeline of one AQ-SGD step.
set -euo pipefail
build="${1:-build}"
bin="$build/bin/slowpipe"
out=results/demo
sweep="$out/finetune"
mkdir -p "$out"
export OMP_NUM_THREADS=1

echo "== demo 1/3: the pretrained model"
scripts/pretrain.sh "$bin"

echo "== demo 2/3: fine-tuning three ways: slowpipe sweep experiments/sweeps/demo.ini"
# A rerun skips the points already complete with the same configuration.
"$bin" sweep experiments/sweeps/demo.ini --out "$sweep"

echo "== demo 3/3: summary, plots and one step's timeline"
"$bin" summary "$sweep"
scripts/plot.sh "$bin" "$out/pretrain_loss.png" --table train --x step --y loss "$out/pretrain.h5"
"$bin" export "$sweep/fw=aq-q2_bw=q4.h5" --blob trace_step_100 > "$sweep/timeline_aq_q2.json"

echo
echo "demo: results in $sweep/"
echo "  summary table: $sweep/summary.md"
echo "  plots: $sweep/plots/*.png (pretraining: $out/pretrain_loss.png)"
echo "  timeline (chrome://tracing or ui.perfetto.dev): $sweep/timeline_aq_q2.json"
