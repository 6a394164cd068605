#!/usr/bin/env bash
# The compute clock's validation figure (docs/netmodel.md, "Validation of the
# shape-aware clock"): predicted against published training throughput,
# tokens per second and GPU, log-log, calibration and held-out rows apart,
# from `slowpipe clock --tsv` (no training; the same on any host).
#   scripts/clock-figure.sh BUILD_DIR [OUT.png] [PUBLISHED.csv] [LAYOUT.csv]
# Defaults: docs/img/clock_validation.png, experiments/clock/published.csv,
# no layout (LAYOUT.csv: `slowpipe clock --layout`, the rows' parallel layouts).
# Writes the numbers beside the set, in results/clock/validation.tsv.
set -euo pipefail
bin="${1:-build}/bin/slowpipe"
out="${2:-docs/img/clock_validation.png}"
set_csv="${3:-experiments/clock/published.csv}"
layout=()
[ -n "${4:-}" ] && layout=(--layout "$4")
[ -x "$bin" ] || { echo "clock-figure: $bin not found (build first)" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "clock-figure: gnuplot not found" >&2; exit 2; }
mkdir -p results/clock "$(dirname "$out")"
tsv=results/clock/validation.tsv
"$bin" clock "$set_csv" "${layout[@]}" --tsv | grep -v '^#' >"$tsv"
summary=$("$bin" clock "$set_csv" "${layout[@]}" --tsv | grep '^# \(calibration\|held-out[a-z0-9-]*\):' | sed 's/^# //' | paste -sd';' | sed 's/;/\\n/g')
term=png; gnuplot -e 'set terminal pngcairo' 2>/dev/null && term=pngcairo
gnuplot <<GP
set terminal $term size 760,640 font ",11"
set output "$out"
set datafile separator "\t"
set title "slowpipe's shape-aware compute clock against published training throughput\\n$summary"
set xlabel "published tokens/s per GPU"
set ylabel "predicted tokens/s per GPU"
set logscale xy
set xrange [50:500000]
set yrange [50:500000]
set key top left
set grid
f(x) = x
plot f(x) with lines lc rgb "gray" dt 1 title "exact", \
     1.25 * x with lines lc rgb "gray" dt 2 title "+/- 25%", 0.8 * x with lines lc rgb "gray" dt 2 notitle, \
     '$tsv' using (stringcolumn(8) eq "calibration" ? \$9 : NaN):10 with points pt 7 ps 1.2 lc rgb "#1f77b4" title "calibration (Ampere)", \
     '$tsv' using (stringcolumn(8) eq "held-out" && stringcolumn(4) ne "fp8" ? \$9 : NaN):10 with points pt 5 ps 1.2 lc rgb "#d62728" title "held-out, bf16 (Hopper, Ada)", \
     '$tsv' using (stringcolumn(8) eq "held-out" && stringcolumn(4) eq "fp8" ? \$9 : NaN):10 with points pt 9 ps 1.4 lc rgb "#ff7f0e" title "held-out, fp8 (Hopper)", \
     '$tsv' using (stringcolumn(8) ne "calibration" && stringcolumn(8) ne "held-out" && strstrt(stringcolumn(8), "encoder") == 0 ? \$9 : NaN):10 with points pt 13 ps 1.4 lc rgb "#2ca02c" title "later held-out set", \
     '$tsv' using (strstrt(stringcolumn(8), "encoder") > 0 ? \$9 : NaN):10 with points pt 6 ps 1.2 lc rgb "#7f7f7f" title "encoders (outside the model)"
GP
echo "clock-figure: wrote $out and $tsv" >&2
