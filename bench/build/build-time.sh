#!/usr/bin/env bash
# The build-time benchmark (not part of `make bench`: it takes minutes and
# wants a quiet machine): a clean Release build of everything (libraries, the
# command line, tests, benchmarks) from a fresh clone of the current commit,
# then the incremental rebuild after touching one netmodel source.
#   bench/build/build-time.sh [JOBS]        (default: nproc)
# Prints the wall and CPU seconds of each, and the ten slowest compile steps.
# Goals (issue 14): clean build <= 7 min on 2 cores, incremental <= 20 s; issue 38:
# <= 8 min on a 2-core AVX2-only host.
set -euo pipefail
jobs="${1:-$(nproc)}"
repo="$(git rev-parse --show-toplevel)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
git clone -q "$repo" "$dir/src"
cd "$dir/src"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null

timed() {  # timed LABEL COMMAND...: wall and CPU (user + sys, children included)
  local label=$1
  shift
  local t0 c0 t1 c1
  t0=$(date +%s.%N)
  c0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  c1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  awk -v l="$label" -v w="$(echo "$t1 - $t0" | bc)" -v c="$(((c1 - c0)))" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%-40s wall %7.1f s   cpu %7.1f s\n", l, w, c / hz}'
}

echo "build-time: $(git log --oneline -1), $jobs jobs, load $(cut -d' ' -f1-3 /proc/loadavg)"
timed "clean build (all: everything but the benchmarks)" cmake --build build -j "$jobs"
touch netmodel/flow_network.cpp
timed "rebuild after touching netmodel/flow_network.cpp" cmake --build build -j "$jobs"
echo "slowest compile steps (s, wall of each job):"
awk 'NR > 1 {printf "%8.1f  %s\n", ($2 - $1) / 1000, $4}' build/.ninja_log | sort -rn | head -10
