#!/usr/bin/env bash
# plot.sh: several runs' HDF5 logs -> one PNG, one column against another.
#
#   scripts/plot.sh SLOWPIPE_BIN OUT.png [--x COL] [--y COL] [--table T]
#                   [--title TEXT] [--logy] [--ema A] [--size W,H] RUN1.h5 [RUN2.h5 ...]
#
# Each run is exported with `SLOWPIPE_BIN export RUN.h5 --table T` (TSV with a
# header line) and labelled with `SLOWPIPE_BIN export RUN.h5 --label` (from the
# run's own config), then experiments/plots/curves.gp draws them. Columns are
# found by header name. Defaults: --x step --y loss --table train.
# --ema A smooths y with an exponential moving average (0 < A < 1, e.g. 0.9).
# Exit codes: 2 for a usage error or a missing column; a failed export passes
# on its own code (2: no such file or table, 3: damaged file).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plots="$here/../experiments/plots"

usage() {
  echo "usage:" >&2
  sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() { echo "plot.sh: $1" >&2; exit "${2:-1}"; }

[ $# -ge 2 ] || usage
bin="$1" out="$2"
shift 2
x=step y=loss table=train title="" logy=0 ema=0 size="1000,650"
runs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --x) [ $# -ge 2 ] || usage; x="$2"; shift 2 ;;
    --y) [ $# -ge 2 ] || usage; y="$2"; shift 2 ;;
    --table) [ $# -ge 2 ] || usage; table="$2"; shift 2 ;;
    --title) [ $# -ge 2 ] || usage; title="$2"; shift 2 ;;
    --ema) [ $# -ge 2 ] || usage; ema="$2"; shift 2 ;;
    --size) [ $# -ge 2 ] || usage; size="$2"; shift 2 ;;
    --logy) logy=1; shift ;;
    -h|--help) usage ;;
    -*) die "unknown option $1" 2 ;;
    *) runs+=("$1"); shift ;;
  esac
done
[ ${#runs[@]} -ge 1 ] || die "no run given (RUN1.h5 ...)" 2
[[ "$ema" =~ ^(0|0?\.[0-9]+)$ ]] || die "--ema wants a number in [0, 1), got '$ema'" 2
[[ "$size" =~ ^[0-9]+,[0-9]+$ ]] || die "--size wants W,H in pixels, got '$size'" 2
command -v "$bin" >/dev/null 2>&1 || die "no such program: $bin" 2
command -v gnuplot >/dev/null 2>&1 || die "gnuplot not found (Debian package gnuplot-nox)"
[ -n "$title" ] || title="$table: $y vs $x"
style=lines
[ "$table" = train ] || style=linespoints  # eval and other sparse tables

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
[[ "$tmp" != *[[:space:]]* ]] || die "temporary folder has a space in its name: $tmp"

# gnuplot single-quoted strings escape ' as ''.
gp_quote() { printf "'%s'" "${1//\'/\'\'}"; }

tsvs="" labels="" plotted=0
for i in "${!runs[@]}"; do
  run="${runs[$i]}"
  tsv="$tmp/run$i.tsv"
  code=0
  "$bin" export "$run" --table "$table" >"$tsv" || code=$?
  [ "$code" -eq 0 ] || die "cannot export table '$table' of $run" "$code"
  label="$("$bin" export "$run" --label)" || die "cannot read the label of $run" "$?"
  header="$(head -n 1 "$tsv")"
  for col in "$x" "$y"; do
    if ! tr '\t' '\n' <<<"$header" | grep -qxF -- "$col"; then
      die "$run: table '$table' has no column '$col'; columns: $(tr '\t' ' ' <<<"$header")" 2
    fi
  done
  valid="$(awk -F'\t' -v y="$y" 'NR == 1 { for (c = 1; c <= NF; ++c) if ($c == y) col = c; next }
           $col != "nan" && $col != "" { n++ } END { print n + 0 }' "$tsv")"
  if [ "$valid" -eq 0 ]; then
    echo "plot.sh: warning: $run has no value in column '$y'; left out" >&2
    continue
  fi
  tsvs+="${tsvs:+ }$tsv"
  labels+="${labels:+ }\"${label//\"/\'}\""
  plotted=$((plotted + 1))
done
[ "$plotted" -ge 1 ] || die "no run has any value in column '$y' of table '$table'" 2

mkdir -p "$(dirname "$out")"
gnuplot -e "out=$(gp_quote "$out"); xcol=$(gp_quote "$x"); ycol=$(gp_quote "$y");
            runs=$(gp_quote "$tsvs"); labels=$(gp_quote "$labels"); title=$(gp_quote "$title");
            logy=$logy; ema=$ema; size=$(gp_quote "$size"); style='$style'" \
  "$plots/curves.gp"
echo "plot.sh: wrote $out ($plotted run(s), $y vs $x)"
