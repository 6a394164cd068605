#!/usr/bin/env bash
# Load-independence check of the simulated time (docs/netmodel.md,
# "Compute-time models"): the same short fine-tuning run on this machine as it
# is, then with every core kept busy by CPU burners beside it, under the
# host-dependent calibrated model, under analytic:A100 (the default
# compute model is analytic too), and under measured (per-step wall clock, for
# comparison). Prints each run's simulated time and its difference from the
# unloaded run of the same model. Target: within 2% with calibrated, bitwise
# identical columns with analytic. Not a unit test (it takes minutes and
# depends on the machine).
#
#   scripts/load-check.sh [--steps N] [--repeat R] [--burners B] [--slowpipe BIN] [--keep DIR]
#                         [--models 'SPEC SPEC...'] [-- TRAIN ARGS...]
#
# Defaults: 60 steps of the demo fine-tuning preset (from scratch, no
# pretrained checkpoint needed), 1 repeat, one burner per core. --keep DIR
# keeps the run logs (their `calibration` blobs show the calibrated seconds).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/bin/slowpipe"
steps=60
repeat=1
burners="$(nproc)"
extra=()
keep=""
models=(calibrated analytic:A100 measured)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --burners) burners="$2"; shift 2 ;;
    --slowpipe) bin="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    --models) read -r -a models <<<"$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "load-check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "load-check.sh: no slowpipe binary at $bin (make build)" >&2; exit 2; }

out="$(mktemp -d /tmp/slowpipe-load-check.XXXXXX)"
pids=()
stop_burners() {
  for p in "${pids[@]:-}"; do [[ -n "$p" ]] && kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]:-}"; do [[ -n "$p" ]] && wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_burners; [[ -n "$keep" ]] && mkdir -p "$keep" && cp "$out"/*.h5 "$keep"/; rm -rf "$out"' EXIT
# A copy of the binaries: a rebuild during the check must not change them.
# The front hands `train` to slowpipe-torch beside it (docs/cli-startup.md).
cp "$bin" "$out/slowpipe"
[[ -x "$(dirname "$bin")/slowpipe-torch" ]] && cp "$(dirname "$bin")/slowpipe-torch" "$out/"
bin="$out/slowpipe"
start_burners() {
  for _ in $(seq "$burners"); do
    sh -c 'while :; do :; done' &
    pids+=($!)
  done
  sleep 1
}

run() {  # run NAME COMPUTE
  "$bin" train --config "$root/experiments/presets/demo-finetune.ini" \
    --set model.init_from= --set run.steps="$steps" --set eval.every=0 --set eval.batches=1 \
    --fw q2 --bw q4 --set net.compute="$2" --set run.progress=none --out "$out/$1.h5" \
    "${extra[@]}" >/dev/null
}
attr() { "$bin" export "$1" --attrs | awk -F'\t' -v k="$2" '$1 == k { print $2 }'; }
sim_cols() {  # the simulated-time columns, full precision
  "$bin" export "$1" | awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^sim_/) c[i] = 1 }
                                    { s = ""; for (i in c) s = s $i " "; print s }'
}

printf '%-7s %-14s %-7s %14s %10s %9s  %s\n' repeat model load sim_time_s vs_idle wall_s columns
for r in $(seq "$repeat"); do
  for load in idle busy; do
    [[ "$load" == busy ]] && start_burners
    for m in "${models[@]}"; do run "$r-$load-${m//:/_}" "$m"; done
    stop_burners
  done
  for m in "${models[@]}"; do
    idle="$out/$r-idle-${m//:/_}.h5"
    for load in idle busy; do
      f="$out/$r-$load-${m//:/_}.h5"
      t="$(attr "$f" sim_time_s)"
      t0="$(attr "$idle" sim_time_s)"
      same="-"
      if [[ "$load" == busy ]]; then
        same="$(cmp -s <(sim_cols "$idle") <(sim_cols "$f") && echo identical || echo differ)"
      fi
      printf '%-7s %-14s %-7s %14.6f %+9.2f%% %9.1f  %s\n' "$r" "$m" "$load" "$t" \
        "$(awk -v a="$t" -v b="$t0" 'BEGIN { print (a - b) / b * 100 }')" \
        "$(attr "$f" wall_time_s)" "$same"
    done
  done
done
