#!/usr/bin/env bash
# Issue 38's measurements on the host this runs on, in one command, as a
# report to paste into docs/performance.md:
#   1. the CPU (model, family, the ISA flags that pick the kernels), the load;
#   2. `slowpipe codec --spec S --shape 1,1024,1600 --against q4 --repeat 31`,
#      N commands per spec (tah:bits=3, tah:bits=3.5, qsgd:s=4, topk:0.1):
#      encode, decode and round-trip time relative to q4's in the same process,
#      min / median / max over the N commands; on a CPU with AVX-512, once as
#      dispatched and once capped to AVX2 (SLOWPIPE_SIMD=avx2);
#   3. bench_compressors' codec rows (5 repetitions, medians), the same ISAs;
#   4. `slowpipe netsim` on the 10,000- and 100,000-flow scaling cases
#      (bench/netmodel/netsim_scenario): CPU seconds (user + sys), median and
#      min-max of N runs, and whether the printed table is byte-identical to
#      the reference (sha256 below: the output of 2026-12-06, issue 38);
#      exit 1 (after the report) where it is not;
#   5. with --build: bench/build/build-time.sh (a fresh clone's clean build)
#      and a fresh clone's `make test`, wall time each.
# One command per measurement at a time, pinned to one core (the last, or
# HOST_CHECK_CORE=N); nothing else should run (the report records the load
# average before each part, and the core). On a shared VM one core can be
# slow for minutes while the other is not: rerun on the other to be sure.
#   bench/host-check.sh [--quick] [--build] [BUILD_DIR] [OUT_DIR]
#     (defaults: build, results/host-check)
# --quick: N = 1 and no bench_compressors (checks that the script runs).
# Builds what it needs first: slowpipe, slowpipe-torch, bench_compressors and
# netsim_scenario (cmake --build BUILD_DIR --target ...). Writes OUT_DIR/report.md
# and the raw outputs beside it. Takes about 10 min without --build, 30-40 with.
set -euo pipefail
quick=0
build_times=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --build) build_times=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "host-check: unknown option '$1' (--quick, --build)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
build="${1:-build}"
out="${2:-results/host-check}"
[ -f "$build/CMakeCache.txt" ] || { echo "host-check: '$build' is not a configured build dir (make build)" >&2; exit 2; }
runs=5
[ "$quick" = 1 ] && runs=1
# The tables `slowpipe netsim` printed on 2026-12-06 (issue 38: unchanged
# since), from their second line on (the first names the scenario's path).
declare -A want_sha=(
  [10000]=420d8d816ea6fe0f70c776438bd22e71cea30bfee64c10b481ccba3869faf6d7
  [100000]=037f78d0a9b9432bd3e0d635f598598f12463a16710f5b96685729ce0cb061a3
)

cmake --build "$build" --target slowpipe slowpipe-torch bench_compressors netsim_scenario >/dev/null
mkdir -p "$out"
report="$out/report.md"
core="${HOST_CHECK_CORE:-$(( $(nproc) - 1 ))}"
if ! [[ "$core" =~ ^[0-9]+$ ]] || [ "$core" -ge "$(nproc)" ]; then
  echo "host-check: HOST_CHECK_CORE='$core' is not a core of this machine (0..$(( $(nproc) - 1 )))" >&2
  exit 2
fi
load() { cut -d' ' -f1-3 /proc/loadavg; }
has_flag() { grep -m1 '^flags' /proc/cpuinfo | grep -qw "$1"; }

{
  echo "# Host check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  echo "- CPU: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), $(nproc) cores"
  printf -- '- flags:'
  for f in avx2 fma f16c bmi2 avx512f avx512bw avx512vl; do has_flag "$f" && printf ' %s' "$f"; done
  echo
  echo "- load average at the start: $(load); every measurement pinned to core $core"
} >"$report"

isas=(default)
has_flag avx512f && isas+=(avx2)

# 2. The codec ratios.
{
  echo
  echo "## slowpipe codec --shape 1,1024,1600 --against q4 --repeat 31 ($runs command(s) each, load $(load))"
  echo
  echo "| spec | path | encode / q4 (min median max) | decode / q4 | round trip / q4 |"
  echo "|---|---|---|---|---|"
} >>"$report"
for isa in "${isas[@]}"; do
  for spec in tah:bits=3 tah:bits=3.5 qsgd:s=4 topk:0.1; do
    raw="$out/codec_${spec//[:=.]/_}_$isa.txt"
    : >"$raw"
    for _ in $(seq "$runs"); do
      if [ "$isa" = default ]; then
        taskset -c "$core" "$build/bin/slowpipe-torch" codec --spec "$spec" --shape 1,1024,1600 \
          --against q4 --repeat 31 >>"$raw"
      else
        SLOWPIPE_SIMD="$isa" taskset -c "$core" "$build/bin/slowpipe-torch" codec --spec "$spec" \
          --shape 1,1024,1600 --against q4 --repeat 31 >>"$raw"
      fi
    done
    # "relative  encode 1.94x, decode 1.40x, round trip 1.77x q4's": the three ratios.
    awk -v spec="$spec" -v isa="$isa" '
      $1 == "relative" { n++; gsub(/[x,]/, ""); e[n] = $3; d[n] = $5; r[n] = $8 }
      function stats(a,   i, j, t, s) {
        for (i = 1; i <= n; i++) s[i] = a[i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
        return sprintf("%.2f %.2f %.2f", s[1], s[int((n + 1) / 2)], s[n])
      }
      END {
        if (n == 0) { print "host-check: no ratios parsed for " spec > "/dev/stderr"; exit 1 }
        printf "| `%s` | %s | %s | %s | %s |\n", spec, isa, stats(e), stats(d), stats(r)
      }' "$raw" >>"$report"
  done
done

# 3. bench_compressors' codec rows.
if [ "$quick" = 0 ]; then
  bench=$(find "$build/bench" -type f -name bench_compressors | head -1)
  filter='BM_QuantizePack_Slowpipe|BM_UnpackDequantize_Slowpipe|BM_TahQuant|BM_TopkRow|BM_TopkCodec|BM_QsgdCodec'
  for isa in "${isas[@]}"; do
    raw="$out/bench_compressors_$isa.txt"
    printf '\n## bench_compressors, %s (5 repetitions, medians; load %s)\n\n' "$isa" "$(load)" >>"$report"
    if [ "$isa" = default ]; then
      OMP_NUM_THREADS=1 taskset -c "$core" "$bench" --benchmark_filter="$filter" \
        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true >"$raw" 2>/dev/null
    else
      SLOWPIPE_SIMD="$isa" OMP_NUM_THREADS=1 taskset -c "$core" "$bench" --benchmark_filter="$filter" \
        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true >"$raw" 2>/dev/null
    fi
    { echo '```'; grep -E '_median' "$raw"; echo '```'; } >>"$report"
  done
fi

# 4. netsim on the scaling cases.
{
  echo
  echo "## slowpipe netsim on the scaling cases ($runs run(s) each, CPU s = user + sys; load $(load))"
  echo
  echo "| flows | CPU s (median, min-max) | table byte-identical to 2026-12-06's |"
  echo "|---|---|---|"
} >>"$report"
cases=(10000 100000)
differs=0
for flows in "${cases[@]}"; do
  scenario="$out/netsim_$flows.json"
  [ -f "$scenario" ] || "$(find "$build/bench" -type f -name netsim_scenario | head -1)" "$flows" "$scenario"
  times=()
  for _ in $(seq "$runs"); do
    t=$( { /usr/bin/time -f '%U %S' taskset -c "$core" "$build/bin/slowpipe" netsim "$scenario" \
      >"$out/netsim_$flows.out"; } 2>&1 | tail -1 | awk '{printf "%.2f", $1 + $2}')
    times+=("$t")
  done
  sha=$(tail -n +2 "$out/netsim_$flows.out" | sha256sum | cut -d' ' -f1)
  same=no
  [ "$sha" = "${want_sha[$flows]}" ] && same=yes
  [ "$same" = yes ] || differs=1
  sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
  echo "$sorted" | awk -v f="$flows" -v same="$same" '
    { n = NF; printf "| %s | %s (%s-%s) | %s |\n", f, $(int((n + 1) / 2)), $1, $n, same }' >>"$report"
done

# 5. Build and test times (a fresh clone each).
if [ "$build_times" = 1 ]; then
  repo="$(git rev-parse --show-toplevel)"
  {
    echo
    echo "## Build and test (load $(load))"
    echo
    echo '```'
    bash "$repo/bench/build/build-time.sh" 2>&1 | tail -15
    echo '```'
  } >>"$report"
  dir="$(mktemp -d)"
  git clone -q "$repo" "$dir/src"
  start=$(date +%s)
  if (cd "$dir/src" && make test >"$out/make_test.log" 2>&1); then rc=0; else rc=$?; fi
  end=$(date +%s)
  echo "- fresh clone, \`make test\`: $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s, exit $rc ($(grep -E 'tests passed|tests failed' "$out/make_test.log" | tail -1))" >>"$report"
  rm -rf "$dir"
fi
echo "host-check: wrote $report"
if [ "$differs" = 1 ]; then
  echo "host-check: slowpipe netsim's table differs from 2026-12-06's (see $out/netsim_*.out)" >&2
  exit 1
fi
