#!/usr/bin/env bash
# Start-up of slowpipe-torch (libtorch loaded): the dynamic loader's symbol
# look-ups (LD_DEBUG=symbols; a count that does not depend on the machine's
# load) and the CPU time of `slowpipe-torch --version` (user + sys from
# /usr/bin/time), N runs (default 21) of each binary interleaved; median and
# min-max. Compare a build with and without SLOWPIPE_LINK_ORDER
# (docs/cli-startup.md, "The loader's search order"):
#   bench/cli/torch_startup.sh [N] BUILD_DIR|PATH/TO/slowpipe-torch...
# Not a test: nothing is asserted.
set -euo pipefail
n=21
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then n=$1; shift; fi
[ $# -ge 1 ] || { echo "usage: torch_startup.sh [N] BUILD_DIR|BINARY..." >&2; exit 2; }
bins=()
for t in "$@"; do
  if [ -f "$t" ]; then bins+=("$(realpath "$t")"); else bins+=("$(realpath "$t/bin/slowpipe-torch")"); fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
echo "# $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg), $n runs each"
for b in "${bins[@]}"; do
  LD_DEBUG=symbols LD_DEBUG_OUTPUT="$work/ld" "$b" --version >/dev/null 2>&1
  echo "# $b: $(cat "$work"/ld.* | grep -c 'lookup in file=') library look-ups at start-up"
  rm -f "$work"/ld.*
done
for _ in $(seq 1 "$n"); do
  for i in "${!bins[@]}"; do
    /usr/bin/time -f "$i %U %S" -a -o "$work/cpu" "${bins[$i]}" --version >/dev/null
  done
done
printf "%-60s %12s %16s\n" binary "median ms" "min-max ms"
for i in "${!bins[@]}"; do
  awk -v i="$i" '$1 == i { print 1000 * ($2 + $3) }' "$work/cpu" | sort -n |
    awk -v b="${bins[$i]}" '{ v[NR] = $1 } END { printf "%-60s %12.0f %7.0f-%-8.0f\n", b, v[int((NR + 1) / 2)], v[1], v[NR] }'
done
