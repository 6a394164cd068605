#!/usr/bin/env bash
# Runs every Google Benchmark binary (single thread) and keeps console output and
# JSON (with date, host and build type in its context) in results/bench/, then
# the start-up times of the light commands (bench/cli/startup.sh).
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
    echo "bench.sh: $b not built (make bench builds them: cmake --build $build --target benches;" \
      "configured with -DSLOWPIPE_BUILD_BENCH=ON)" >&2
    exit 2
  fi
  echo "== $b"
  "$exe" --benchmark_filter="$filter" --benchmark_out="$out/$b.json" --benchmark_out_format=json \
    | tee "$out/$b.txt"
done
# The codec comparison again with glibc keeping freed memory, so libtorch's
# temporaries are not page-faulted in afresh on every call (see the comment at
# the top of bench/compressors/bench_compressors.cpp).
exe=$(find "$build/bench" -type f -name bench_compressors | head -1)
echo "== bench_compressors, glibc keeping freed memory"
MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 \
  "$exe" --benchmark_filter="$filter" --benchmark_out="$out/bench_compressors.keepheap.json" \
  --benchmark_out_format=json | tee "$out/bench_compressors.keepheap.txt"
# Start-up of the light commands through the front (not a Google Benchmark:
# whole processes, wall time and peak RSS).
echo "== start-up of the light commands (bench/cli/startup.sh)"
"$(dirname "$0")/../bench/cli/startup.sh" "$build" | tee "$out/startup.txt"
echo "== start-up of slowpipe-torch (bench/cli/torch_startup.sh)"
"$(dirname "$0")/../bench/cli/torch_startup.sh" "$build" | tee "$out/torch_startup.txt"
echo "bench.sh: results in $out/"
