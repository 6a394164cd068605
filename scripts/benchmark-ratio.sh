#!/usr/bin/env bash
# The benchmark-at-laptop-scale table and figure of docs/benchmark.md, from the
# runs of reproduction B1 (experiments/reproduce/b1.ini): steps to the target
# under the evaluation rule per width and arm (`slowpipe summary --target-on
# eval`, seed means), their ratio, and the full-scale T each ratio implies:
# the dense record's 2,925 steps x ratio x slowpipe's predicted ReparamSSN
# step time (`slowpipe timing --preset protocol-nanogpt-ssn`), against the
# published 181,487 s.
#   scripts/benchmark-ratio.sh BUILD_DIR [RUNS_DIR] [OUT.png]
#     (defaults: results/reproduce/b1, docs/img/benchmark_ratio.png)
# Writes the table beside the runs: RUNS_DIR/ratio.tsv.
set -euo pipefail
bin="${1:-build}/bin/slowpipe"
runs="${2:-results/reproduce/b1}"
out="${3:-docs/img/benchmark_ratio.png}"
target=2.4  # experiments/reproduce/b1.ini's [claim] target
[ -x "$bin" ] || { echo "benchmark-ratio: $bin not found (build first)" >&2; exit 2; }
[ -d "$runs" ] || { echo "benchmark-ratio: no runs in '$runs' (make reproduce-b1)" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "benchmark-ratio: gnuplot not found" >&2; exit 2; }
step_s=$("$bin" timing --preset protocol-nanogpt-ssn --tsv | awk -F'\t' 'NR == 2 {print $3}')
tsv="$runs/ratio.tsv"
"$bin" summary "$runs" --target "$target" --target-on eval --tsv | awk -F'\t' -v step_s="$step_s" '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  {
    c = $col["model.d_model"]; k = $col["model.subspace"]
    s = $col["eval_steps_to_target"]; n = $col["n"]; reached = $col["eval_time_to_target_reached"]
    # Dense protocol-gpt parameters, 8 blocks, vocabulary 256 (docs/models.md):
    # 256 C + C, 8 (12 C^2 + 11 C), C + 256 C + 256.
    params[c] = 256 * c + c + 8 * (12 * c * c + 11 * c) + c + 256 * c + 256
    if (k == 0) { dense[c] = s; dense_r[c] = reached "/" n } else { ssn[c] = s; ssn_r[c] = reached "/" n; kk[c] = k }
  }
  END {
    printf "d_model\tparameters\tk\tdense_steps\tdense_reached\tssn_steps\tssn_reached\tratio\timplied_T_s\n"
    for (c in params) order[++m] = c + 0
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
    for (i = 1; i <= m; i++) {
      c = order[i]
      ratio = (dense[c] + 0 > 0 && ssn[c] != "inf" && dense[c] != "inf") ? ssn[c] / dense[c] : "inf"
      implied = ratio == "inf" ? "inf" : sprintf("%.0f", 2925 * ratio * step_s)
      printf "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c, params[c], kk[c], dense[c], dense_r[c], ssn[c], ssn_r[c], (ratio == "inf" ? "inf" : sprintf("%.3f", ratio)), implied
    }
  }' >"$tsv"
column -t -s $'\t' "$tsv"
echo "benchmark-ratio: ReparamSSN step predicted $step_s s; table $tsv" >&2
term=png; gnuplot -e 'set terminal pngcairo' 2>/dev/null && term=pngcairo
mkdir -p "$(dirname "$out")"
gnuplot <<GP
set terminal $term size 800,480 font ",11"
set output "$out"
set datafile separator "\t"
set title "Steps to eval loss $target: ReparamSSN / dense, protocol-gpt at laptop scale (B1, 2 seeds)"
set xlabel "dense parameters"
set ylabel "step ratio (ReparamSSN / dense)"
set logscale x
set xrange [80000:1400000]
set yrange [0:4.5]
set grid
set key bottom right
plot "$tsv" using 2:(stringcolumn(8) eq "inf" ? NaN : \$8) skip 1 with linespoints lw 2 pt 7 ps 1.5 title "slowpipe, GCIDE bytes", \
     3.12 with lines lw 2 dt 2 title "published 3.12 (2,925 vs 9,125 steps, 204 M parameters)", \
     2.34 with lines lw 1.5 dt 4 lc rgb "#777777" title "B1's tolerance (3.12 +-25%)", \
     3.90 with lines lw 1.5 dt 4 lc rgb "#777777" notitle
GP
echo "benchmark-ratio: wrote $out" >&2
