#!/usr/bin/env bash
# Runs every Google Benchmark binary (single thread) and keeps console output and
# JSON (with date, host and build type in its context) in results/bench/.
#   scripts/bench.sh [BUILD_DIR] [benchmark filter regex]
set -euo pipefail
build="${1:-build}"
filter="${2:-.}"
out=results/bench
mkdir -p "$out"
export OMP_NUM_THREADS=1
for b in bench_netmodel bench_compressors bench_models bench_engine; do
  exe=$(find "$build/bench" -type f -name "$b" | head -1)
  if [ -z "$exe" ]; then
    echo "bench.sh: $b not built (configure with -DSLOWPIPE_BUILD_BENCH=ON)" >&2
    exit 2
  fi
  echo "== $b"
  "$exe" --benchmark_filter="$filter" --benchmark_out="$out/$b.json" --benchmark_out_format=json \
    | tee "$out/$b.txt"
done
echo "bench.sh: results in $out/"
