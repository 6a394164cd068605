#!/usr/bin/env bash
# The default experiment (`make demo`): pretrain a small byte-level GPT on GCIDE,
# then fine-tune it on a distinct text cut into 4 pipeline stages over a
# simulated 100 Mbit/s network, three ways: fp32, direct 2-bit activations and
# AQ-SGD 2-bit activations (4-bit activation-gradients for both). Writes
# results/demo/*.h5, loss plots against step and against simulated time, and a
# Chrome/Perfetto timeline of one AQ-SGD step.
set -euo pipefail
build="${1:-build}"
bin="$build/sim/slowpipe"
out=results/demo
mkdir -p "$out"
export OMP_NUM_THREADS=1

if [ "$(head -c 8 "$out/pretrain.pt" 2>/dev/null | tr -d '\0')" != SLOWPIPE ]; then  # missing or old format
  echo "== demo 1/4: pretraining on GCIDE [0, 0.8) (once; the checkpoint is reused)"
  "$bin" train --config experiments/presets/demo-pretrain.ini
else
  echo "== demo 1/4: reusing $out/pretrain.pt (delete it to pretrain again)"
fi

echo "== demo 2/4: fine-tuning, fp32 activations and gradients"
"$bin" train --config experiments/presets/demo-finetune.ini \
  --fw none --bw none --out "$out/finetune_fp32.h5" --set run.label="fp32"
echo "== demo 3/4: fine-tuning, direct 2-bit activations, 4-bit gradients"
"$bin" train --config experiments/presets/demo-finetune.ini \
  --fw q2 --bw q4 --out "$out/finetune_q2.h5" --set run.label="direct q2 / q4"
echo "== demo 4/4: fine-tuning, AQ-SGD 2-bit activations, 4-bit gradients"
"$bin" train --config experiments/presets/demo-finetune.ini \
  --fw 'aq(q2)' --bw q4 --out "$out/finetune_aq_q2.h5" --set run.label="AQ-SGD q2 / q4" \
  --set trace.every=100

runs=("$out/finetune_fp32.h5" "$out/finetune_q2.h5" "$out/finetune_aq_q2.h5")
scripts/plot.sh "$bin" "$out/pretrain_loss.png" --table train --x step --y loss "$out/pretrain.h5"
scripts/plot.sh "$bin" "$out/loss_vs_step.png" --table train --x step --y loss "${runs[@]}"
scripts/plot.sh "$bin" "$out/loss_vs_sim_time.png" --table train --x sim_time_s --y loss "${runs[@]}"
scripts/plot.sh "$bin" "$out/eval_vs_step.png" --table eval --x step --y loss "${runs[@]}"
"$bin" export "$out/finetune_aq_q2.h5" --blob trace_step_100 > "$out/timeline_aq_q2.json"

echo
echo "demo: results in $out/"
for r in "${runs[@]}"; do
  "$bin" export "$r" --table train | awk -F'\t' -v name="$(basename "$r")" \
    'NR==1{for(i=1;i<=NF;i++)h[$i]=i; next} {l=$h["loss"]; t=$h["sim_time_s"]}
     END{printf "  %-24s final train loss %.3f, simulated time %.1f s\n", name, l, t}'
done
echo "  plots: $out/loss_vs_step.png $out/loss_vs_sim_time.png $out/eval_vs_step.png"
echo "  timeline (chrome://tracing or ui.perfetto.dev): $out/timeline_aq_q2.json"
