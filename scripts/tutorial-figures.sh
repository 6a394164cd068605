#!/usr/bin/env bash
# Makes the figures of docs/tutorial.md into docs/img/ from the reproductions' run
# logs (run `make reproduce` first) and the fine-tuning comparison's (slowpipe
# sweep experiments/compare/finetune.ini). This script is the only thing that
# writes the tutorial's figures into docs/img/; the commands the page shows write
# the same plots below results/tutorial/. Each block below is the command the
# page shows beside its figure, with a copy into docs/img/.
#   scripts/tutorial-figures.sh [BUILD_DIR [GROUP...]]
# BUILD_DIR defaults to build. GROUPs (default: all): a1 (figures 1-5, from
# results/reproduce/a1), r1 (6, r1-cnn), r23 (7), a2 (8, A2's timing tables),
# compare (the Pareto charts, results/compare-finetune).
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
groups=" ${*:-a1 r1 r23 a2 compare} "
r=results/reproduce
cmp=results/compare-finetune
img="${IMG:-docs/img}"
mkdir -p "$img"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
need() {
  [ -d "$1" ] || { echo "tutorial-figures: $1 is missing: $2" >&2; exit 2; }
}
# `slowpipe plot` of some runs into $tmp/NAME; take copies one of its figures.
plot() { local name=$1; shift; "$bin" plot "$@" --out "$tmp/$name" >/dev/null; }
take() { cp "$tmp/$1/$2.png" "$img/$3.png"; echo "$img/$3.png"; }

if [[ $groups == *" a1 "* ]]; then
  a1=$r/a1
  need $a1 "make reproduce-a1"
  # The A1 runs of one setting, every seed: FW BW WARMUP_EPOCHS.
  runs() { echo $a1/fw=$1_bw=$2_warmup_epochs=$3_seed=*.h5; }
  # Figures 1 and 2: train loss against step and against simulated time (100 Mbit/s):
  # per setting the mean of A1's three seeds, with their min-max band.
  plot a1-step $(runs none none 0) $(runs q2 q8 0) $(runs q2 q8 1) $(runs aq-q2 q8 0)
  take a1-step train_loss_vs_step a1_loss_vs_step
  plot a1-time $(runs none none 0) $(runs q2 q8 0) $(runs q4 q8 0) $(runs aq-q2 q8 0) $(runs aq-q4 q8 0)
  take a1-time train_loss_vs_sim_time a1_loss_vs_sim_time
  # Figures 3 and 4: what crosses each boundary, per epoch: AQ-SGD's delta norm, and
  # the relative error of the activation the next stage receives.
  plot a1-delta $(runs aq-q2 q8 0) $(runs aq-q3 q8 0) $(runs aq-q4 q8 0)
  take a1-delta channel_by_epoch_fw_delta_norm a1_delta_norm
  plot a1-error $(runs q2 q8 0) $(runs q4 q8 0) $(runs aq-q2 q8 0) $(runs aq-q4 q8 0)
  take a1-error channel_by_epoch_fw_rel_error a1_rel_error
  # Figure 5: A1's final train loss against the activation bits, all 30 runs.
  plot a1-all $a1
  take a1-all final_train_loss_vs_fw_bits a1_final_loss_vs_fw_bits
fi

if [[ $groups == *" r1 "* ]]; then
  # Figure 6: the CNN's final accuracy against the backward bits (R1).
  need $r/r1-cnn "make reproduce-r1"
  plot r1 $r/r1-cnn
  take r1 final_accuracy_vs_bw_bits r1_accuracy_vs_bw_bits
fi

if [[ $groups == *" r23 "* ]]; then
  # Figure 7: the CNN's final accuracy against TopK's K (R2/R3).
  need $r/r23 "make reproduce-r23"
  plot r23 $r/r23
  take r23 final_accuracy_vs_fw_k r23_accuracy_vs_k
fi

if [[ $groups == *" a2 "* ]]; then
  # Figure 8: whole-run speed-up against bandwidth (A2's timing tables).
  need $r/a2 "make reproduce-a2"
  gnuplot -e "out='$img/timing_speedup.png'; column='run_speedup';
              tables='$r/a2/act.tsv $r/a2/e2e.tsv';
              labels='\"AQ-SGD q4/q8, 1 replica\" \"+ q8 gradients, 4 replicas\"';
              title='GPT-2 XL, 8 stages: whole-run speed-up (10 epochs, 1 warm-up)'" \
    experiments/plots/timing_speedup.gp
  echo "$img/timing_speedup.png"
fi

if [[ $groups == *" compare "* ]]; then
  # Figures 9 to 11: the comparison's Pareto charts, final train loss against bytes
  # per step and against simulated whole-run time at 100 Mbit/s and 1 Gbit/s (the
  # same runs retimed: no training).
  need $cmp "slowpipe sweep experiments/compare/finetune.ini"
  cmp1g=${cmp}-1Gbps
  if [ ! -d "$cmp1g" ]; then
    cmp1g=$tmp/compare-finetune-1Gbps
    "$bin" retime $cmp --set net.preset=1Gbps --out "$cmp1g" >/dev/null
  fi
  plot cmp $cmp "$cmp1g"
  take cmp pareto_loss_vs_wire_bytes tutorial_pareto_bytes
  take cmp pareto_loss_vs_sim_time_100Mbps tutorial_pareto_time_100Mbps
  take cmp pareto_loss_vs_sim_time_1Gbps tutorial_pareto_time_1Gbps
fi
