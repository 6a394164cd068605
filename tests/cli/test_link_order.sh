#!/usr/bin/env bash
# slowpipe-torch's library order (cmake/SlowpipeLinkOrder.cmake,
# docs/cli-startup.md "The loader's search order"):
#   - every symbol that slowpipe-torch's own libraries, libtorch, BLAS, LAPACK,
#     OpenMP, HDF5 and the C and C++ runtimes use binds to the same library as
#     in REFERENCE, a torch binary linked in the default order (all references
#     bound at start with LD_BIND_NOW; a data symbol copied into an executable
#     is left out: each executable copies its own);
#   - where the order was applied (ORDER = ON), slowpipe-torch names the listed libraries
#     first (bench/cli/startup.sh measures what that saves).
# Usage: test_link_order.sh PATH/TO/slowpipe SOURCE_DIR REFERENCE ORDER
bin="$1"
reference="$3"
order="$4"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
torch_bin="$(dirname "$bin")/slowpipe-torch"

# bindings BINARY ARGS...: "referencing-library symbol defining-library" lines.
bindings() {
  LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/ld" "$@" >/dev/null 2>&1
  cat "$work"/ld.* | grep -E 'binding file [^ ]*/lib(torch|c10|gloo|hdf5|openblas|blas|lapack|gomp|sleef|XNNPACK|pthreadpool|cpuinfo|protobuf|fmt|boost|z\.|stdc\+\+|c\.so|m\.so|gcc_s)' |
    awk -v exe="$1" '{
      for (i = 1; i <= NF && $i != "file"; i++) {}
      from = $(i + 1); to = $(i + 4); sym = $(i + 8); gsub(/[`\047]/, "", sym)
      if (from == exe || to == exe) next
      n = split(from, a, "/"); m = split(to, b, "/"); print a[n], sym, b[m] }' |
    sort -u
  rm -f "$work"/ld.*
}
bindings "$torch_bin" --version >ordered.txt
bindings "$reference" --list-tests >default.txt
# Compared where both bind the same reference.
join -j1 <(awk '{ print $1 "|" $2, $3 }' ordered.txt | sort) <(awk '{ print $1 "|" $2, $3 }' default.txt | sort) >both.txt
[ "$(wc -l <both.txt)" -ge 1000 ] && ok || bad "only $(wc -l <both.txt) references bound in both binaries"
awk '$2 != $3' both.txt >moved.txt
[ ! -s moved.txt ] && ok || bad "$(wc -l <moved.txt) references bind elsewhere than in a default link, e.g. $(head -3 moved.txt)"
grep -q '^libtorch_cpu[^|]*|sgemm_ ' both.txt && ok || bad "libtorch's sgemm_ not among the compared references"
# The comparison can fail: a binding moved by hand shows.
sed '1s/ [^ ]*$/ moved.so/' both.txt | awk '$2 != $3' | grep -q . && ok || bad "the comparison cannot fail"

# With the order on (ORDER = ON), the listed libraries come before the
# executable's own first library (a default link names boost's first).
if [ "$order" = ON ]; then
  readelf -d "$torch_bin" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' >needed.txt
  first_own=$(grep -n '^libboost_program_options' needed.txt | cut -d: -f1)
  listed=$(grep -v '^#' "$2/cmake/link_order.txt" | cut -d' ' -f1 | grep -Fxf - needed.txt | head -1)
  at=$(grep -nFx "$listed" needed.txt | cut -d: -f1)
  [ -n "$first_own" ] && [ -n "$at" ] && [ "$at" -lt "$first_own" ] && ok ||
    bad "slowpipe-torch's needed libraries are not in the listed order: $(head -5 needed.txt | tr '\n' ' ')"
  [ "$(head -1 needed.txt)" = libm.so.6 ] && ok || bad "slowpipe-torch's first needed library is $(head -1 needed.txt)"
fi
finish test_link_order
