#!/usr/bin/env bash
# Public and internal headers (docs/architecture.md): each library folder keeps
# the headers no other library needs in LIB/internal/.
#  1. A library's internal headers are included only by its own sources, its
#     tests (tests/FAMILY/), its benchmarks (bench/FAMILY/) and the fuzz targets;
#     FAMILY is the first part of the library's path (compressors for
#     compressors/codecs).
#  2. A public header (LIB/*.h) never includes its library's internals.
#  3. A public header is included by at least one other library or command
#     (another folder below, or cli/), or by another public header of its own
#     library: what only its own sources and tests use belongs in LIB/internal/.
# Usage: test_layering.sh SOURCE_DIR
set -u
src=${1:?usage: test_layering.sh SOURCE_DIR}
cd "$src" || exit 1
libs="common netmodel pipeline whatif compressors/codecs compressors/channels models/facts
  models/torch runlog config sim study/summary study/sweeps distributed cli"
roots="common netmodel pipeline whatif compressors models runlog config sim study distributed cli"
fail=0
# Lines "FILE:LINE:#include ..." of the sources that include PATH.
includers() { grep -rnF "#include \"$1" --include='*.cpp' --include='*.h' $roots tests bench fuzz 2>/dev/null; }
for lib in $libs; do
  fam=${lib%%/*}
  hits=$(includers "$lib/internal/" | grep -vE "^($lib/|tests/$fam/|bench/$fam/|fuzz/)")
  if [ -n "$hits" ]; then
    echo "FAIL: $lib/internal/ included from outside $lib (its sources, tests/$fam, bench/$fam, fuzz):"
    echo "$hits"
    fail=1
  fi
  hits=$(grep -nE "#include \"$lib/internal/" "$lib"/*.h 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "FAIL: public headers of $lib include its internals:"
    echo "$hits"
    fail=1
  fi
  [ "$lib" = cli ] && continue  # the commands' headers serve cli's two executables
  for h in "$lib"/*.h; do
    [ -e "$h" ] || continue
    # Used by another library, or by one of this library's public headers
    # (then it is part of what that header shows).
    if [ -z "$(includers "$h\"" | grep -vE "^($lib/[^:]*\.cpp:|$lib/[^:]*/|tests/|bench/|fuzz/)")" ]; then
      echo "FAIL: $h is public but no other library includes it: move it to $lib/internal/"
      fail=1
    fi
  done
done
# Controls: the checks find what they exist to catch.
if ! printf 'distributed/x.cpp:1:#include "sim/internal/resume_checkpoint.h"\n' |
  grep -vE "^(sim/|tests/sim/|bench/sim/|fuzz/)" | grep -qF '#include "sim/internal/'; then
  echo "FAIL: the control include was not caught"
  fail=1
fi
if [ -n "$(printf 'tests/sim/t.cpp:1:#include "sim/x.h"\nsim/y.cpp:1:#include "sim/x.h"\nsim/internal/z.h:1:#include "sim/x.h"\n' |
  grep -vE "^(sim/[^:]*\.cpp:|sim/[^:]*/|tests/|bench/|fuzz/)")" ]; then
  echo "FAIL: the control header used only by its library and tests was counted as public"
  fail=1
fi
[ $fail = 0 ] && echo "ok: internal headers stay inside their library; every public header has a user"
exit $fail
