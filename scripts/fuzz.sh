#!/usr/bin/env bash
# `make fuzz`: build the libFuzzer targets of fuzz/ with clang (coverage, ASan,
# UBSan) in build-fuzz/, run each for a fixed time on a scratch copy of its seed
# corpus, and print the executions per target and in total. Any crash, leak,
# timeout or out-of-memory input fails the run and is kept in
# build-fuzz/crashes/TARGET/.
#
#   scripts/fuzz.sh [TARGET...]        default: every target that was built
#   FUZZ_SECONDS=300 scripts/fuzz.sh   seconds per target (default 60)
#   FUZZ_ARGS='-max_len=65536'         extra libFuzzer flags for every target
#   FUZZ_BUILD=DIR                     build directory (default build-fuzz)
# See fuzz/README.md for running one target longer and reproducing a crash.
set -uo pipefail
seconds="${FUZZ_SECONDS:-60}"
build="${FUZZ_BUILD:-build-fuzz}"
jobs="${JOBS:-$(nproc)}"
read -r -a extra <<<"${FUZZ_ARGS:-}"
case "$seconds" in '' | *[!0-9]*) echo "fuzz: FUZZ_SECONDS='$seconds' is not a whole number of seconds" >&2; exit 2 ;; esac

cc="${CC:-clang}" cxx="${CXX:-clang++}"
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: $cxx not found; run scripts/install-deps.sh --fuzz" >&2
  exit 2
fi
# -gline-tables-only: file:line in reports at a fraction of full debug info's cost.
CC="$cc" CXX="$cxx" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-gline-tables-only" -DSLOWPIPE_FUZZ=ON \
  -DSLOWPIPE_BUILD_TESTS=OFF -DSLOWPIPE_BUILD_BENCH=OFF >"$build.configure.log" 2>&1 || {
  cat "$build.configure.log" >&2
  exit 1
}
rm -f "$build.configure.log"
# Build only the fuzz binaries asked for and what they link (not the simulator
# or the tests).
cmake --build "$build" -j "$jobs" --target "${@:-slowpipe_fuzzers}" || exit 1

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(find "$build/fuzz" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x -printf '%f\n' | sort)
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no fuzz targets built (no fuzz/fuzz_*.cpp?)" >&2
  exit 1
fi

symbolizer=$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer 2>/dev/null | tail -1)
[ -n "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
# Sanitizer runtime options while fuzzing:
#   ASan: abort_on_error=0 lets libFuzzer catch the report, save the input and
#   exit with its own error code; detect_leaks stays on (libFuzzer reports a leak
#   per input as a failure).
#   UBSan: print_stacktrace=1 names the caller chain; the build aborts on the first
#   report (-fno-sanitize-recover=undefined).
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
export OMP_NUM_THREADS=1

total=0
failed=()
summary=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/$t"
  if [ ! -x "$bin" ]; then
    echo "fuzz: no target $t in $build/fuzz" >&2
    failed+=("$t")
    continue
  fi
  corpus="$build/corpus/$t"      # scratch: the seeds plus what earlier runs found
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  if [ -d "fuzz/corpus/$t" ]; then cp -n fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null; fi
  log="$build/logs/$t.log"
  mkdir -p "$build/logs"
  stamp="$build/logs/$t.start"
  touch "$stamp"   # inputs saved after it are this run's
  echo "== fuzz $t: ${seconds} s, corpus $corpus ($(find "$corpus" -type f | wc -l) inputs)"
  # -timeout: one input taking longer than 25 s is reported as a hang.
  # -rss_limit_mb: libtorch under ASan needs more than the 2 GB default.
  "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=25 -rss_limit_mb=6144 \
    -artifact_prefix="$crashes/" "${extra[@]}" "$corpus" >"$log" 2>&1
  rc=$?
  execs=$(awk '/stat::number_of_executed_units:/ {n=$2} END {print n+0}' "$log")
  total=$((total + execs))
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    summary+=("$(printf '%-24s %12d executions  FAILED (exit %d)' "$t" "$execs" "$rc")")
    echo "fuzz $t FAILED (exit $rc). The end of its log ($log):" >&2
    grep -v '^#[0-9]' "$log" | tail -40 >&2
    for a in $(find "$crashes" -type f -newer "$stamp"); do
      echo "  input kept: $a" >&2
      echo "  reproduce:  $bin $a" >&2
    done
    echo "  Turn it into a regression test: fix the bug, add a unit test in tests/ that feeds" >&2
    echo "  this input, and copy the input into fuzz/corpus/$t/ (see fuzz/README.md)." >&2
  else
    summary+=("$(printf '%-24s %12d executions' "$t" "$execs")")
  fi
done

echo
echo "fuzz: ${seconds} s per target"
printf '  %s\n' "${summary[@]}"
printf '  %-24s %12d executions\n' "total" "$total"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $build/crashes/)" >&2
  exit 1
fi
echo "fuzz: no crash"
