#!/usr/bin/env bash
# The swarm figure of docs/netmodel.md ("The swarm preset"): throughput of the
# swarm-gpt2xl what-if (GPT-2 XL, 8 stages on home PCs, home links drawn per
# host) against the number of replicas, one line per compression set-up, from
# `slowpipe timing --tsv` (no training; analytic clock, the same on any host).
#   scripts/swarm-figure.sh BUILD_DIR [OUT.png]   (default docs/img/swarm_throughput.png)
# Writes the numbers beside it in results/swarm/throughput.tsv.
set -euo pipefail
bin="${1:-build}/bin/slowpipe"
out="${2:-docs/img/swarm_throughput.png}"
[ -x "$bin" ] || { echo "swarm-figure: $bin not found (build first)" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "swarm-figure: gnuplot not found" >&2; exit 2; }
mkdir -p results/swarm "$(dirname "$out")"
tsv=results/swarm/throughput.tsv
# label | fw | bw | grad
setups=("fp32|none|none|none" "fp16 everywhere|fp16|fp16|fp16" "activations q8/q8|q8|q8|none"
        "gradients q4|none|none|q4" "q8/q8/q8|q8|q8|q8" "q4/q8/q4|q4|q8|q4" "AQ-SGD q4/q8, gradients q2|aq(q4)|q8|q2")
replicas=(4 8 16 32 64 128 256)
printf 'setup\treplicas\tstep_s\tsamples_per_s\tfp32_speedup\n' >"$tsv"
for s in "${setups[@]}"; do
  IFS='|' read -r label fw bw grad <<<"$s"
  for r in "${replicas[@]}"; do
    line=$("$bin" timing --preset swarm-gpt2xl --replicas "$r" --fw "$fw" --bw "$bw" --grad "$grad" --tsv | sed -n 2p)
    printf '%s\t%s\t%s\n' "$label" "$r" "$(echo "$line" | awk -F'\t' '{print $3 "\t" $4 "\t" $7}')" >>"$tsv"
  done
  echo "swarm-figure: $label done" >&2
done
term=png; gnuplot -e 'set terminal pngcairo' 2>/dev/null && term=pngcairo
plots=""
i=0
for s in "${setups[@]}"; do
  label="${s%%|*}"
  i=$((i + 1))
  plots+="${plots:+, }'$tsv' using (stringcolumn(1) eq \"$label\" ? \$2 : NaN):4 with linespoints lw 2 pt $((i + 3)) title \"$label\""
done
gnuplot <<GP
set terminal $term size 900,520 font ",11"
set output "$out"
set datafile separator "\t"
set title "swarm-gpt2xl: GPT-2 XL, 8 stages on home PCs, 20 ms between homes\\nhome uploads log-normal, median 50 Mbit/s (docs/netmodel.md)"
set xlabel "replicas (pipelines of 8 homes each)"
set ylabel "samples/s (after warm-up)"
set logscale xy 2
set key outside right top
set grid
plot $plots
GP
echo "swarm-figure: wrote $out and $tsv"
