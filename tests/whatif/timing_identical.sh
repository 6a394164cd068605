#!/usr/bin/env bash
# Checks that two slowpipe binaries print byte-identical `slowpipe timing`
# output (assumptions, tables and TSV) for the timing presets and a spread of
# schedules, replica counts, gradient-sync modes and network options: the
# guard of a refactor or a fast path of the replay that must not change any
# printed number. Not run by ctest (it needs a reference binary built from
# another commit).
#   tests/whatif/timing_identical.sh REFERENCE_BIN [CANDIDATE_BIN]
# CANDIDATE_BIN defaults to build/bin/slowpipe (else build/sim/slowpipe).
# Exit 0: all identical; 1: a difference (the first diff is shown); 2: usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ref=${1:-}
new=${2:-}
if [ -z "$ref" ] || [ ! -x "$ref" ]; then
  echo "usage: $0 REFERENCE_BIN [CANDIDATE_BIN]" >&2
  exit 2
fi
if [ -z "$new" ]; then
  for b in "$here/../../build/bin/slowpipe" "$here/../../build/sim/slowpipe"; do
    if [ -x "$b" ]; then new=$b; break; fi
  done
fi
[ -x "$new" ] || { echo "timing_identical: no candidate binary (build slowpipe)" >&2; exit 2; }

cases=(
  "--preset aqsgd-gpt2xl"
  "--preset aqsgd-deberta"
  "--preset aqsgd-gpt2xl --fw aq(q4) --bw q8 --baseline both"
  "--preset aqsgd-deberta --fw q4 --bw q4 --grad q8 --replicas 4"
  "--model gpt2-xl --replicas 4 --bandwidth 1Gbps,100Mbps"
  "--model gpt2-xl --replicas 3 --set timing.grad_sync=momentum --bandwidth 1Gbps"
  "--model gpt2-small --schedule 1f1b --replicas 2"
  "--model gpt2-small --schedule interleaved --set timing.virtual_stages=2 --replicas 2"
  "--model gpt2-small --schedule zb-h1 --replicas 2 --set timing.grad_sync=momentum"
  "--model gpt2-small --replicas 4 --set net.nic_bandwidth=1Gbps --bandwidth 10Gbps"
  "--model gpt2-small --replicas 3 --set net.stages_per_host=2 --set net.nic_bandwidth=5Gbps"
  "--model gpt2-small --replicas 2 --set net.links=0-1:100Mbps,2-6:geo-us-asia"
  "--model gpt2-small --replicas 2 --set net.jitter=2ms --set net.seed=7"
  "--model gpt2-xl --net geo-us-europe --replicas 2 --set net.overhead=64B"
  "--model gpt2-xl --replicas 16 --bandwidth 1Gbps"
  "--model gpt2-xl --replicas 64 --set net.nic_bandwidth=2Gbps --bandwidth 1Gbps"
  "--model gpt2-small --replicas 5 --set timing.grad_sync=momentum --set net.nic_bandwidth=2Gbps"
  "--model gpt2-small --replicas 3 --set net.links=0-1:100Mbps,4-5:100Mbps,8-9:100Mbps"
  "--model gpt2-small --replicas 3 --set timing.grad_sync=momentum --set net.links=0-4:1Gbps:5ms,4-8:1Gbps:5ms,8-0:1Gbps:5ms"
)
n=0
for c in "${cases[@]}"; do
  for tsv in "" "--tsv"; do
    # shellcheck disable=SC2086  # the cases are word lists
    a=$("$ref" timing $c $tsv 2>&1) || true
    # shellcheck disable=SC2086
    b=$("$new" timing $c $tsv 2>&1) || true
    if [ "$a" != "$b" ]; then
      echo "timing_identical: differs for: timing $c $tsv" >&2
      diff <(echo "$a") <(echo "$b") | head -20 >&2
      exit 1
    fi
    n=$((n + 1))
  done
done
echo "timing_identical: $n outputs identical ($ref vs $new)"
