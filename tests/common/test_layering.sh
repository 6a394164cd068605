#!/usr/bin/env bash
# Public and internal headers (README.md, "Layout"): a library's internal
# headers live in LIB/internal/. Only the library's own sources, its tests
# (tests/LIB/) and its benchmarks (bench/LIB/) may include them; a public header
# (LIB/*.h) never does, so including a public header never reaches another
# library's internals. Usage: test_layering.sh SOURCE_DIR
set -u
src=${1:?usage: test_layering.sh SOURCE_DIR}
cd "$src" || exit 1
libs="common netmodel compressors models whatif runlog config sim study dist cli"
fail=0
for lib in $libs; do
  # Includes of this library's internals from anywhere else.
  hits=$(grep -rnE "#include \"$lib/internal/" --include='*.cpp' --include='*.h' \
    $libs tests bench fuzz 2>/dev/null | grep -vE "^($lib|tests/$lib|bench/$lib)/")
  if [ -n "$hits" ]; then
    echo "FAIL: $lib/internal/ included from outside $lib (its sources, tests/$lib, bench/$lib):"
    echo "$hits"
    fail=1
  fi
  # Public headers that expose internals.
  hits=$(grep -nE "#include \"$lib/internal/" "$lib"/*.h 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "FAIL: public headers of $lib include its internals:"
    echo "$hits"
    fail=1
  fi
done
# Control: the check finds what it exists to catch.
if ! printf 'dist/x.cpp:1:#include "sim/internal/resume_checkpoint.h"\n' | grep -vE "^(sim|tests/sim|bench/sim)/" |
  grep -qE '#include "sim/internal/'; then
  echo "FAIL: the control include was not caught"
  fail=1
fi
[ $fail = 0 ] && echo "ok: internal headers stay inside their library"
exit $fail
