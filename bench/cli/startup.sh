#!/usr/bin/env bash
# Start-up cost of the light commands: wall time and peak memory of each
# documented example (README, docs/command-line.md) of `slowpipe --version`,
# `codecs`, `timing`, `netsim` and `export`,
# run N times (default 20) one after the other. Prints the median and min-max
# wall time in ms (bash's EPOCHREALTIME around the call) and the peak RSS in MB
# (/usr/bin/time -f %M, median of 3 separate runs so the timer's own fork and
# exec stay out of the wall times). Goal (issue 14): <= 50 ms each.
#   bench/cli/startup.sh BUILD_DIR|PATH/TO/slowpipe [N]
# A file argument is the binary itself (e.g. a copy of an older build, to
# compare). `export` reads a 12-step run log made first by the same binary's
# `train` (a few seconds). Not a test: nothing is asserted.
set -euo pipefail
target="${1:-build}"
n="${2:-20}"
if [ -f "$target" ]; then bin=$(realpath "$target"); else bin=$(realpath "$target/bin/slowpipe"); fi
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OMP_NUM_THREADS=1

for i in $(seq 1 400); do echo "pipeline stage $i sends compressed activations over a slow link"; done >corpus.txt
"$bin" train --set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16 \
  --set data.name=text --set data.path=corpus.txt --set pipeline.batch_size=8 --set eval.batches=2 \
  --set run.progress=none --steps 12 --out run.h5 >train.log 2>&1 ||
  { echo "startup.sh: the run log for 'export' could not be made:" >&2; tail -3 train.log >&2; exit 1; }

# name|arguments (one documented example per command)
examples=(
  "--version|--version"
  "codecs|codecs"
  "timing|timing --preset aqsgd-gpt2xl --fw aq(q4) --bw q8 --baseline both --epochs 10"
  "netsim|netsim $src/experiments/netsim/three_flows.json"
  "export|export run.h5 --table train"
)
echo "# $("$bin" --version) on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# binary: $bin (libraries loaded: $(ldd "$bin" | wc -l))"
printf "%-10s %10s %18s %8s\n" command "median ms" "min-max ms" "RSS MB"
for e in "${examples[@]}"; do
  name="${e%%|*}"
  read -r -a args <<<"${e#*|}"
  "$bin" "${args[@]}" >/dev/null 2>&1 || { echo "startup.sh: '$name' failed" >&2; exit 1; }  # warm the page cache
  times=()
  for _ in $(seq 1 "$n"); do
    t0=$EPOCHREALTIME
    "$bin" "${args[@]}" >/dev/null 2>&1
    t1=$EPOCHREALTIME
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", (b - a) * 1000}')")
  done
  rss=()
  for _ in 1 2 3; do
    /usr/bin/time -f %M -o rss.txt "$bin" "${args[@]}" >/dev/null 2>&1
    rss+=("$(tail -1 rss.txt)")
  done
  printf "%s\n" "${times[@]}" | sort -g >sorted.txt
  median=$(awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}' sorted.txt)
  range="$(head -1 sorted.txt)-$(tail -1 sorted.txt)"
  mb=$(printf "%s\n" "${rss[@]}" | sort -g | sed -n 2p | awk '{printf "%.1f", $1/1024}')
  printf "%-10s %10.1f %18s %8s\n" "$name" "$median" "$range" "$mb"
done
