#!/usr/bin/env bash
# Measured against simulated step time on real shaped links: a distributed
# 4-stage run (one process per stage, each in its own network namespace, every
# pair of processes joined by its own link shaped with htb + a per-flow fair
# queue: scripts/shaped-net.sh) at each rate, fp32 and compressed. Prints the
# median measured step time (dist_step_time_s), the median simulated one
# (sim_step_time_s) for the same steps, and their ratio. Root only.
#   scripts/netmodel-check.sh [--bin build/bin/slowpipe] [--steps N] [--rates "100mbit 1gbit"]
#                             [--compute calibrated|measured] [--out DIR]
# docs/distributed.md explains the workload and what the gap is made of.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin="$here/../build/bin/slowpipe"
steps=30
rates="100mbit 1gbit"
compute=calibrated
out=results/netmodel-check
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --compute) compute=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "netmodel-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "netmodel-check: no slowpipe binary at $bin (make build)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "netmodel-check: needs root (network namespaces, tc)" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The workload: a 4-layer GPT cut into 4 stages, GPipe with 4 micro-batches,
# byte-level text from the GCIDE dictionary (the demo's data).
workload=(--set model.layers=4 --set model.d_model=64 --set model.heads=2 --set model.seq_len=256
          --set pipeline.stages=4 --set pipeline.microbatches=4 --set pipeline.batch_size=32
          --set run.steps="$steps" --set eval.every=0 --set eval.batches=1 --set eval.at_start=false
          --set run.progress=none --set run.overwrite=true --set net.latency=50us
          --set net.efficiency=0.9564 --set net.compute="$compute" --set dist.timeout=60s)
declare -A channels=([fp32]="--fw none --bw none" [q4/q8]="--fw q4 --bw q8")

# median_of FILE COLUMN: the median of a train column over steps 6.. (after warm-up).
median_of() {
  "$bin" export "$1" | awk -F'\t' -v c="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
    NR > 6 { print $k }' | sort -g | awk '{ v[NR] = $1 }
    END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

printf '| rate | channels | measured step (s) | simulated step (s) | measured / simulated |\n'
printf '|---|---|---|---|---|\n'
for rate in $rates; do
  bw=${rate/mbit/Mbps}
  bw=${bw/gbit/Gbps}
  for name in fp32 q4/q8; do
    log="$out/${rate}-${name/\//-}.h5"
    # shellcheck disable=SC2086
    "$here/shaped-net.sh" --nproc 4 --rate "$rate" -- "$bin" train "${workload[@]}" \
      ${channels[$name]} --set net.bandwidth="$bw" --out "$log" >"$log.log" 2>&1 ||
      { echo "netmodel-check: the $rate $name run failed; see $log.log" >&2; exit 1; }
    m=$(median_of "$log" dist_step_time_s)
    s=$(median_of "$log" sim_step_time_s)
    printf '| %s | %s | %.4f | %.4f | %.2f |\n' "$rate" "$name" "$m" "$s" "$(echo "$m / $s" | bc -l)"
  done
done
