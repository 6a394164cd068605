#!/usr/bin/env bash
# The model-size ladder's figures (docs/scale.md): per claim, each method's gap
# to fp32 (percent of fp32's loss, in the claim's metric) against the model's
# parameter count, log x, one line per method, with seed-spread error bars,
# from the d_model 128 claim's results and its ladder's (d_model 64, 256).
#   scripts/scale-gap.sh [BUILD_DIR | SLOWPIPE_BINARY] [CLAIM...]
#     CLAIM: a1 a1-long p1m t1 rb1 m1 (default: all; see the table below)
# Environment: COMMITTED (default experiments/reproduce/results), RUNS (default
# results/reproduce), IMG (default docs/img), OUT (default results/scale).
# Writes IMG/scale_CLAIM.png and the numbers behind it, OUT/scale_CLAIM.tsv
# (one row per method and size: n, mean, spread, gap and error bar), and
# prints each method's trend from d_model 64 to 256 (docs/scale.md's rule).
#
# Numbers per results folder NAME: the committed COMMITTED/NAME/runs.tsv where
# it exists (verdict --save), else the run logs in RUNS/NAME/ (`slowpipe
# summary --tsv --no-group`: only then is the binary needed), else the folder
# is skipped with a note, so the figure draws whatever sizes exist. A folder
# without a model.d_model column is the claim's own file, d_model 128.
# Complete runs only: a diverged run is left out and named (the verdict
# counts it as the worst value instead).
#
# gap = 100 (mean_method - mean_fp32) / mean_fp32, the means over seeds at one
# size; error bar = 100 s / mean_fp32, s the pooled sample standard deviation
# over seeds of the two groups (the spread the claim's checks use). x is the
# unconstrained 4-layer GPT's parameter count at that d_model (48 d^2 + 630 d:
# vocabulary 256, T 64; docs/models.md); parameter-matched arms are within 0.1%
# of it. Leaves out: anything but the mean-over-seeds reading of the checks.
set -euo pipefail

# One line per claim (a new claim's ladder: one more line):
#   claim NAME "RESULTS FOLDERS" METRIC REFERENCE_LABEL PAIR_KEY LABEL_SED DECIDING MARGIN_PCT
# RESULTS FOLDERS: the claim's own (d_model 128) and its ladder's; METRIC: the
# summary column the claim's checks read; REFERENCE_LABEL: the run.label the
# gap is taken to; PAIR_KEY: a key whose value must match the reference's too
# ("" for none; e.g. optim.name where one claim runs two optimizers; KEY=VALUE
# gives the value of a folder that does not sweep KEY, so RB1's AdamW-only
# ladder joins its d_model 128 AdamW arm); LABEL_SED:
# a sed script applied to run.label so one method has one name at every size;
# DECIDING: the labels of the claim's "like fp32" checks, ';'-separated, whose
# worst gap is the claim's trend; MARGIN_PCT: the claim's percentage margin, drawn.
claims() {
  claim a1 "a1 a1-scale" train_loss fp32 "" "" "AQ-SGD q2;AQ-SGD q3;AQ-SGD q4" 2
  claim a1-long "a1-long a1-long-scale" train_loss fp32 "" "" "AQ-SGD q2;AQ-SGD q3;AQ-SGD q4" 2
  claim p1m "p1m p1m-scale" train_loss fp32 "" 's#k=16#d/8#;s#k=8#d/16#' "subspace d/8, matched;subspace d/16, matched" 2
  claim t1 "t1 t1-scale" train_loss fp32 "" "" "TAH-Quant 3;TAH-Quant 4" 2
  claim rb1 "rb1 rb1-scale" train_loss fp32 optim.name=adamw 's#r=8 #d/16 #;s#r=4 #d/32 #' "ResBM d/16 + q8 (64x);ResBM d/32 + q8 (128x)" 2
  claim m1 "m1 m1-scale" eval_loss fp32 "" 's#k=32 #d/4 #;s#k=16 #d/8 #;s#k=16,#d/8,#' "learned d/4 + anchors (4x);learned d/8 + anchors (8x)" 2
}

arg="${1:-build}"
[ $# -gt 0 ] && shift
if [ -d "$arg" ]; then bin="$arg/bin/slowpipe"; else bin="$arg"; fi
command -v gnuplot >/dev/null || { echo "scale-gap: gnuplot not found" >&2; exit 2; }
committed="${COMMITTED:-experiments/reproduce/results}"
runs="${RUNS:-results/reproduce}"
img="${IMG:-docs/img}"
out="${OUT:-results/scale}"
wanted=("$@")
mkdir -p "$img" "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
term=png; gnuplot -e 'set terminal pngcairo' 2>/dev/null && term=pngcairo

# The runs of one results folder as: label, pair value, d_model, seed, status, metric.
runs_of() {  # NAME METRIC PAIR_KEY
  local name=$1 metric=$2 pair=$3
  if [ -f "$committed/$name/runs.tsv" ]; then
    echo "scale-gap: $name: $committed/$name/runs.tsv" >&2
    grep -v '^#' "$committed/$name/runs.tsv"
  elif compgen -G "$runs/$name/*.h5" >/dev/null; then
    [ -x "$bin" ] || { echo "scale-gap: $bin not found: needed for the run logs in $runs/$name/ (build first, or pass the binary)" >&2; exit 2; }
    echo "scale-gap: $name: the run logs in $runs/$name/" >&2
    # The summary has no run.label column; each run's resolved NAME.ini has it.
    "$bin" summary "$runs/$name" --tsv --no-group | awk -F'\t' -v OFS='\t' '
      NR == 1 { for (i = 1; i <= NF; i++) if ($i == "run") r = i; print $0, "run.label"; next }
      {
        ini = $r; sub(/\.h5$/, ".ini", ini); lab = ""
        while ((getline line < ini) > 0) if (line ~ /^run\.label *=/) { sub(/^run\.label *= */, "", line); lab = line }
        close(ini)
        if (lab == "") { lab = ini; sub(/.*\//, "", lab); sub(/_seed=[0-9]+\.ini$/, "", lab) }
        print $0, lab
      }'
  else
    echo "scale-gap: no results for '$name' (neither $committed/$name/runs.tsv nor $runs/$name/*.h5): skipped" >&2
  fi | awk -F'\t' -v OFS='\t' -v metric="$metric" -v pair="$pair" -v name="$name" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
              if (!(metric in col) || !("run.label" in col) || !("status" in col)) {
                print "scale-gap: " name ": no run.label, status or " metric " column" > "/dev/stderr"; exit 2 }
              next }
    {
      d = ("model.d_model" in col) ? $col["model.d_model"] : 128
      # PAIR_KEY=DEFAULT: the value of a folder that does not sweep the key.
      key = pair; dflt = ""
      if (index(pair, "=") > 0) { key = substr(pair, 1, index(pair, "=") - 1); dflt = substr(pair, index(pair, "=") + 1) }
      p = (key != "" && (key in col)) ? $col[key] : dflt
      s = ("run.seed" in col) ? $col["run.seed"] : 1
      print $col["run.label"], p, d, s, $col["status"], $col[metric]
    }'
}

claim() {
  local name=$1 folders=$2 metric=$3 ref=$4 pair=$5 labelsed=$6 deciding=$7 margin=$8
  if [ ${#wanted[@]} -gt 0 ] && ! printf '%s\n' "${wanted[@]}" | grep -qxF "$name"; then return 0; fi
  local all="$tmp/$name.runs" table="$out/scale_$name.tsv" png="$img/scale_$name.png"
  : >"$all"
  for f in $folders; do runs_of "$f" "$metric" "$pair" >>"$all"; done
  if [ -n "$labelsed" ]; then
    awk -F'\t' -v OFS='\t' '{print $1}' "$all" | sed "$labelsed" >"$tmp/labels"
    paste "$tmp/labels" <(cut -f2- "$all") >"$all.2" && mv "$all.2" "$all"
  fi
  awk -F'\t' '$5 != "complete" { printf "scale-gap: %s: left out, %s: %s d_model %s seed %s\n", n, $5, $1, $3, $4 > "/dev/stderr" }' n="$name" "$all"
  # Groups (label, pair, d_model): n, mean, sample variance; the gap to the
  # reference group of the same pair value and size.
  awk -F'\t' -v OFS='\t' -v ref="$ref" -v metric="$metric" '
    $5 == "complete" && $6 != "" {
      k = $1 SUBSEP $2 SUBSEP $3; n[k]++; sum[k] += $6; sq[k] += $6 * $6
      lab[k] = $1; pv[k] = $2; dm[k] = $3
    }
    END {
      print "method", "d_model", "parameters", "n", "mean_" metric, "std", "fp32_mean", "fp32_std", "gap_pct", "err_pct"
      for (k in n) {
        if (!((pv[k], dm[k]) in sizes)) { sizes[pv[k], dm[k]] = 1; npv[pv[k]]++ }
        m[k] = sum[k] / n[k]
        v[k] = n[k] > 1 ? (sq[k] - n[k] * m[k] * m[k]) / (n[k] - 1) : 0
        if (v[k] < 0) v[k] = 0
      }
      for (k in n) {
        r = ref SUBSEP pv[k] SUBSEP dm[k]
        if (!(r in n)) continue
        dof = (n[k] - 1) + (n[r] - 1)
        s = dof > 0 ? sqrt(((n[k] - 1) * v[k] + (n[r] - 1) * v[r]) / dof) : 0
        # A pair value that runs at one size only (the Muon arm of RB1 at d 128) is
        # named; the one the ladder runs (at every size) is not: its lines join.
        method = (pv[k] == "" || npv[pv[k]] > 1) ? lab[k] : lab[k] " (" pv[k] ")"
        c = dm[k]
        printf "%s\t%d\t%d\t%d\t%.6f\t%.6f\t%.6f\t%.6f\t%.4f\t%.4f\n", method, c, 48 * c * c + 630 * c, n[k],
          m[k], sqrt(v[k]), m[r], sqrt(v[r]), 100 * (m[k] - m[r]) / m[r], 100 * s / m[r]
      }
    }' "$all" | { IFS= read -r head; echo "$head"; sort -t$'\t' -k1,1 -k2,2n; } >"$table"
  local rows; rows=$(($(wc -l <"$table") - 1))
  if [ "$rows" -le 0 ]; then echo "scale-gap: $name: no runs to draw" >&2; return 0; fi
  column -t -s $'\t' "$table"
  # Trend per method, d_model 64 -> 256 (docs/scale.md): D = gap(256) - gap(64)
  # against max(2 error bars combined, 1 point); the claim's trend is its
  # deciding methods' worst gap.
  awk -F'\t' -v deciding="$deciding" -v name="$name" '
    NR == 1 { next }
    { g[$1, $2] = $9; e[$1, $2] = $10; meth[$1] = 1 }
    function trend(a, ea, b, eb,   t) {
      t = 2 * sqrt(ea * ea + eb * eb); if (t < 1) t = 1
      return (b - a > t) ? "grows" : (a - b > t) ? "shrinks" : "steady"
    }
    END {
      for (x in meth) if (((x, 64) in g) && ((x, 256) in g))
        printf "scale-gap: %s: %s: gap %+.2f%% (d 64) -> %+.2f%% (d 256): %s\n", name, x, g[x, 64], g[x, 256], trend(g[x, 64], e[x, 64], g[x, 256], e[x, 256]) > "/dev/stderr"
      nd = split(deciding, dl, ";")
      for (i = 1; i <= 2; i++) {
        d = i == 1 ? 64 : 256; worst[d] = ""
        for (j = 1; j <= nd; j++) if ((dl[j], d) in g && (worst[d] == "" || g[dl[j], d] > worst[d])) { worst[d] = g[dl[j], d]; we[d] = e[dl[j], d] }
      }
      if (worst[64] != "" && worst[256] != "")
        printf "scale-gap: %s: deciding gap (worst of %s) %+.2f%% -> %+.2f%%: %s (the README column also needs the per-size verdicts: docs/scale.md)\n", name, deciding, worst[64], worst[256], trend(worst[64], we[64], worst[256], we[256]) > "/dev/stderr"
    }' "$table"
  # One gnuplot block per method (a header line with its name, then its sizes);
# the methods are drawn 3% apart in x so that their bars do not overlap.
  local dat="$tmp/$name.dat" n=0
  while IFS= read -r m; do
    [ $n -gt 0 ] && printf '\n\n' >>"$dat"
    printf '"%s"\n' "$m" >>"$dat"
    awk -F'\t' -v m="$m" 'NR > 1 && $1 == m { print $3 "\t" $9 "\t" $10 }' "$table" >>"$dat"
    n=$((n + 1))
  done < <(awk -F'\t' 'NR > 1 && !seen[$1]++ { print $1 }' "$table")
  gnuplot <<GP
set terminal $term size 1000,860 font ",11"
set output "$png"
set datafile separator "\t"
# Twelve distinguishable styles (colour, point, dash), one per method.
$(i=0; for c in 1b9e77 d95f02 7570b3 e7298a 66a61e e6ab02 a6761d 666666 1f78b4 e31a1c 000000 b15928; do
  echo "set linetype $((i + 1)) lc rgb '#$c' pt $((5 + 2 * (i % 4))) dt $((1 + i / 6))"; i=$((i + 1)); done)
set logscale x
set xrange [150000:5000000]
set xtics ("237k (d 64)" 236928, "867k (d 128)" 867072, "3.3M (d 256)" 3307008)
set grid
set lmargin at screen 0.09
set rmargin at screen 0.66
set multiplot layout 2,1 title "${name}: gap to ${ref} against model size (${metric}, mean over seeds; bars: pooled seed spread)" noenhanced
set ylabel "gap to ${ref} (% of ${ref}'s ${metric})" noenhanced
set key at screen 0.68, screen 0.9 left top noenhanced
set title "every method" noenhanced
plot for [i=0:$((n - 1))] "$dat" index i using (\$1 * (1 + 0.03 * (i - $(((n - 1) / 2))))):2:3 with yerrorlines lt (i + 1) lw 2 ps 1.3 title columnheader(1), \
     0 with lines lc rgb "#000000" dt 1 lw 1 notitle, \
     $margin with lines dt 2 lc rgb "#777777" lw 1.5 title "+${margin}% (the claim's margin)"
unset key
set title "near ${ref}: -$((2 * margin))% to +$((6 * margin))%" noenhanced
set xlabel "parameters (unconstrained 4-layer GPT)" noenhanced
set yrange [-$((2 * margin)):$((6 * margin))]
plot for [i=0:$((n - 1))] "$dat" index i using (\$1 * (1 + 0.03 * (i - $(((n - 1) / 2))))):2:3 with yerrorlines lt (i + 1) lw 2 ps 1.3 notitle, \
     0 with lines lc rgb "#000000" dt 1 lw 1 notitle, \
     $margin with lines dt 2 lc rgb "#777777" lw 1.5 notitle
unset multiplot
GP
  echo "scale-gap: wrote $png and $table" >&2
}

claims
