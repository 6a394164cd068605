#!/usr/bin/env bash
# `make lint`: clang-tidy over every slowpipe source (libraries, command line,
# tests, benchmarks) under the committed .clang-tidy; any finding fails.
#
#   scripts/lint.sh [BUILD_DIR]     (default build-lint)
#   LINT_FILES=REGEX scripts/lint.sh   only the sources whose path matches REGEX
#
# The compile commands come from a configure-only build directory without the
# precompiled headers (clang cannot read GCC's .gch files), so nothing is built.
# clang-tidy parses each source with all its headers: about 20 minutes of CPU
# for the whole tree (libtorch headers dominate), JOBS in parallel.
set -euo pipefail
build="${1:-build-lint}"
jobs="${JOBS:-$(nproc)}"
root="$(pwd)"
files="${LINT_FILES:-^$root/(common|pipeline|netmodel|whatif|compressors|models|runlog|config|sim|study|distributed|cli|tests|bench)/}"

if ! command -v run-clang-tidy >/dev/null 2>&1; then
  echo "lint: run-clang-tidy not found: scripts/install-deps.sh --lint installs clang-tidy" >&2
  exit 1
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLOWPIPE_PCH=OFF -DSLOWPIPE_UNITY=OFF \
  -DSLOWPIPE_BUILD_TESTS=ON -DSLOWPIPE_BUILD_BENCH=ON >/dev/null
log="$build/clang-tidy.log"
# .clang-tidy sets WarningsAsErrors, so a finding makes clang-tidy, and
# run-clang-tidy after it, exit non-zero.
if run-clang-tidy -p "$build" -j "$jobs" -quiet "$files" >"$log" 2>&1; then
  echo "lint: clean ($(grep -c '^clang-tidy' "$log") sources)"
else
  grep -E 'warning:|error:' "$log" | sed 's/\x1b\[[0-9;]*m//g' | sort -u >&2 || true
  echo "lint: findings above (full output: $log)" >&2
  exit 1
fi
