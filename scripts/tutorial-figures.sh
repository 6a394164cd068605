#!/usr/bin/env bash
# Makes the figures of docs/tutorial.md into docs/img/ from the reproductions'
# run logs (run `make reproduce` first) and the fine-tuning comparison's
# (slowpipe sweep experiments/compare/finetune.ini). This script is the only
# thing that writes the tutorial's figures into docs/img/; the commands the page
# shows write the same plots below results/tutorial/. Each block below is the
# command the page shows beside its figure, with docs/img/ as its output.
#   scripts/tutorial-figures.sh [BUILD_DIR [GROUP...]]
# BUILD_DIR defaults to build; GROUPs (default: all) are reproduce (figures 1-7,
# from results/reproduce/) and compare (the Pareto charts, results/compare-finetune/).
# IMG=DIR writes into DIR instead of docs/img, to look before replacing.
# The 1 Gbit/s chart uses results/compare-finetune-1Gbps when it exists (slowpipe
# retime, docs/retime.md), else makes that copy in a temporary folder (seconds).
# Leaves out the cheap path's plots (results/tutorial/quick/plots/): every reader
# makes them in two minutes, and the page describes them in words.
set -euo pipefail
bin="${1:-build}/bin/slowpipe"
[ -x "$bin" ] || { echo "tutorial-figures: no $bin: build first (make demo)" >&2; exit 2; }
bin="$(cd "$(dirname "$bin")" && pwd)/slowpipe"
shift || true
groups="${*:-reproduce compare}"
r=results/reproduce
cmp=results/compare-finetune
img="${IMG:-docs/img}"
mkdir -p "$img"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
a1=$r/a1

compare_figures() {
  [ -d "$cmp" ] || { echo "tutorial-figures: $cmp is missing: slowpipe sweep experiments/compare/finetune.ini" >&2; exit 2; }
  # Figures 9 and 10: the comparison's Pareto charts, final train loss against bytes
  # per step and against simulated whole-run time at 100 Mbit/s and 1 Gbit/s.
  local cmp1g=${cmp}-1Gbps
  if [ ! -d "$cmp1g" ]; then
    cmp1g=$tmp/compare-finetune-1Gbps
    "$bin" retime $cmp --set net.preset=1Gbps --out "$cmp1g" >/dev/null
  fi
  "$bin" plot $cmp "$cmp1g" --out "$tmp/cmp" >/dev/null
  cp "$tmp/cmp/pareto_loss_vs_wire_bytes.png" $img/tutorial_pareto_bytes.png
  cp "$tmp/cmp/pareto_loss_vs_sim_time_100Mbps.png" $img/tutorial_pareto_time_100Mbps.png
  cp "$tmp/cmp/pareto_loss_vs_sim_time_1Gbps.png" $img/tutorial_pareto_time_1Gbps.png
}
case " $groups " in *" compare "*) compare_figures ;; esac
case " $groups " in *" reproduce "*) ;; *) ls -la $img/tutorial_pareto_*.png; exit 0 ;; esac
for d in a1 a2 r1-cnn r23; do
  [ -d "$r/$d" ] || { echo "tutorial-figures: $r/$d is missing: run make reproduce first" >&2; exit 2; }
done

# Figure 1: train loss against step, seed 1 of A1.
scripts/plot.sh "$bin" $img/a1_loss_vs_step.png --size 800,480 --ema 0.9 \
  --title "fine-tuning, train loss (EMA 0.9), seed 1" \
  $a1/fw=none_bw=none_warmup_epochs=0_seed=1.h5 $a1/fw=q2_bw=q8_warmup_epochs=0_seed=1.h5 \
  $a1/fw=q2_bw=q8_warmup_epochs=1_seed=1.h5 $a1/fw=aq-q2_bw=q8_warmup_epochs=0_seed=1.h5

# Figure 2: the same runs against simulated time on 100 Mbit/s.
scripts/plot.sh "$bin" $img/a1_loss_vs_sim_time.png --size 800,480 --ema 0.9 --x sim_time_s \
  --title "fine-tuning over 100 Mbit/s, train loss (EMA 0.9) against simulated time" \
  $a1/fw=none_bw=none_warmup_epochs=0_seed=1.h5 $a1/fw=q2_bw=q8_warmup_epochs=0_seed=1.h5 \
  $a1/fw=q4_bw=q8_warmup_epochs=0_seed=1.h5 $a1/fw=aq-q2_bw=q8_warmup_epochs=0_seed=1.h5 \
  $a1/fw=aq-q4_bw=q8_warmup_epochs=0_seed=1.h5

# Figure 3: what crosses boundary 1: AQ-SGD's delta norm, per epoch.
scripts/plot.sh "$bin" $img/a1_delta_norm.png --size 800,480 --y fw1_delta_norm \
  --title "AQ-SGD: norm of the compressed change a - m at boundary 1" \
  $a1/fw=aq-q2_bw=q8_warmup_epochs=0_seed=1.h5 $a1/fw=aq-q4_bw=q8_warmup_epochs=0_seed=1.h5

# Figure 4: relative error of the activation the next stage receives.
scripts/plot.sh "$bin" $img/a1_rel_error.png --size 800,480 --y fw1_rel_error --logy \
  --title "relative error of the received activation at boundary 1" \
  $a1/fw=q2_bw=q8_warmup_epochs=0_seed=1.h5 $a1/fw=q4_bw=q8_warmup_epochs=0_seed=1.h5 \
  $a1/fw=aq-q2_bw=q8_warmup_epochs=0_seed=1.h5 $a1/fw=aq-q4_bw=q8_warmup_epochs=0_seed=1.h5

# Figures 5 and 6: final accuracy against bits (R1) and against K (R2/R3), from slowpipe plot.
"$bin" plot $r/r1-cnn --out "$tmp/r1" >/dev/null
cp "$tmp/r1/final_accuracy_vs_bw_bits.png" $img/r1_accuracy_vs_bw_bits.png
"$bin" plot $r/r23 --out "$tmp/r23" >/dev/null
cp "$tmp/r23/final_accuracy_vs_fw_k.png" $img/r23_accuracy_vs_k.png

# Figure 7: whole-run speed-up against bandwidth (A2's timing tables).
gnuplot -e "out='$img/timing_speedup.png'; column='run_speedup';
            tables='$r/a2/act.tsv $r/a2/e2e.tsv';
            labels='\"AQ-SGD q4/q8, 1 replica\" \"+ q8 gradients, 4 replicas\"';
            title='GPT-2 XL, 8 stages: whole-run speed-up (10 epochs, 1 warm-up)'" \
  experiments/plots/timing_speedup.gp

ls -la $img/a1_*.png $img/r1_*.png $img/r23_*.png $img/timing_*.png
