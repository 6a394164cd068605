#!/usr/bin/env bash
# `make sanitize`: build slowpipe with AddressSanitizer and UndefinedBehaviorSanitizer
# in its own build directory and run the whole CTest suite there.
#
#   scripts/sanitize.sh [BUILD_DIR]      (default build-sanitize)
#   SANITIZE_BUILD_ONLY=1 scripts/sanitize.sh   configure and build, run nothing
#
# The compiler is the one the normal build uses (GCC on Debian), so the
# instrumented code links against the same, uninstrumented libtorch, HDF5 and
# OpenBLAS as the release build. Those libraries are not instrumented: ASan sees
# their heap through its malloc interceptors but not their stack or globals,
# and UBSan checks only our code. The benchmarks are not built (they time code,
# and timings under sanitizers mean nothing).
set -euo pipefail
build="${1:-build-sanitize}"
jobs="${JOBS:-$(nproc)}"

cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-g1" \
  -DSLOWPIPE_SANITIZE=ON \
  -DSLOWPIPE_BUILD_BENCH=OFF \
  -DSLOWPIPE_BUILD_TESTS=ON >/dev/null
# -g1: line tables only, so reports name file:line without the cost of full
# debug info in the torch-heavy objects.
cmake --build "$build" -j "$jobs"
if [ "${SANITIZE_BUILD_ONLY:-0}" = 1 ]; then
  exit 0
fi

# Runtime options, each with its reason.
asan_options=(
  # Stop at the first report: a run that goes on after memory corruption proves
  # nothing, and the first report is the one to read.
  halt_on_error=1
  # Die by SIGABRT rather than _exit(1), so a report can never pass for a test
  # that exits 1 on purpose (the CLI tests check exit codes).
  abort_on_error=1
  # Also report static-initialisation-order bugs between our own globals.
  check_initialization_order=1
  strict_init_order=1
  # Check the whole string argument of strlen/strcmp-like calls, not only the
  # part that was read.
  strict_string_checks=1
  # Report use of a stack variable after its function returned.
  detect_stack_use_after_return=1
)
ubsan_options=(
  # Every undefined-behaviour report fails the test that triggered it.
  halt_on_error=1
  # Name the caller chain, not only the line.
  print_stacktrace=1
)
export ASAN_OPTIONS="$(IFS=:; echo "${asan_options[*]}")"
export UBSAN_OPTIONS="$(IFS=:; echo "${ubsan_options[*]}")"
export OMP_NUM_THREADS=1
echo "sanitize: ASAN_OPTIONS=$ASAN_OPTIONS"
echo "sanitize: UBSAN_OPTIONS=$UBSAN_OPTIONS"
cd "$build" && ctest --output-on-failure -j 1
