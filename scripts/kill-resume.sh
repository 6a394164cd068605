#!/usr/bin/env bash
# Kill a training run at random points, resume it, and compare the result with
# a run that was never interrupted, bit for bit: the whole train table (all but
# the measured-time columns step_time_s, wall_time_s, compute_s), the whole eval
# table, and the final weights (run.save).
#
#   scripts/kill-resume.sh [-n KILLS] [-s SEED] [-k] SLOWPIPE -- TRAIN_OPTIONS...
#
# Each attempt kills one run with SIGKILL: either after a random delay, or with
# SLOWPIPE_FAULT at a chosen point (in the middle of writing a checkpoint, during
# an evaluation, right after a step is logged), and then runs
# `slowpipe train --resume` until the run is complete. Give a deterministic
# compute model (e.g. --set net.compute=fixed:0.01) so sim_time_s is
# comparable, and checkpoints often enough to matter (run.checkpoint_every).
# -k keeps the scratch folder. Prints one line per attempt and
# "N passed, M failed"; exits non-zero on any mismatch.
set -uo pipefail

kills=10
seed=1
keep=0
while getopts "n:s:k" opt; do
  case "$opt" in
    n) kills="$OPTARG" ;;
    s) seed="$OPTARG" ;;
    k) keep=1 ;;
    *) sed -n '2,17p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
bin="${1:?usage: kill-resume.sh [-n KILLS] [-s SEED] [-k] SLOWPIPE -- TRAIN_OPTIONS...}"
shift
[ "${1:-}" = "--" ] && shift
opts=("$@")
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

work=$(mktemp -d)
if [ "$keep" -eq 1 ]; then echo "kill-resume: scratch folder $work"; else trap 'rm -rf "$work"' EXIT; fi
RANDOM=$seed
passed=0
failed=0

# Tables without the measured-time columns.
comparable() {  # RUN.h5 TABLE
  "$bin" export "$1" --table "$2" |
    awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) drop[i]=($i=="step_time_s"||$i=="wall_time_s"||$i=="compute_s")}
                {s=""; for(i=1;i<=NF;i++) if(!drop[i]) s=s (s==""?"":"\t") $i; print s}'
}

run_train() {  # NAME [extra args...]: runs in the foreground, returns its exit code
  local name="$1"
  shift
  "$bin" train "${opts[@]}" --set run.progress=none --out "$work/$name.h5" \
    --set run.save="$work/$name.pt" "$@" >>"$work/$name.log" 2>&1
}

# The reference: never interrupted.
start=$(date +%s%N)
if ! run_train ref; then
  echo "kill-resume: the reference run failed:" >&2
  tail -5 "$work/ref.log" >&2
  exit 1
fi
ref_ms=$((($(date +%s%N) - start) / 1000000))
comparable "$work/ref.h5" train >"$work/ref.train"
comparable "$work/ref.h5" eval >"$work/ref.eval"
ref_steps=$(($(wc -l <"$work/ref.train") - 1))
# The fixed cost of a run (start-up, data, warm-up, final evaluation): one step.
start=$(date +%s%N)
run_train fixed --set run.steps=1 || true
fixed_ms=$((($(date +%s%N) - start) / 1000000))
[ "$fixed_ms" -lt "$ref_ms" ] || fixed_ms=0
echo "kill-resume: reference run: $ref_steps steps in $ref_ms ms (fixed cost $fixed_ms ms)"

# Ordered so that a few kills already meet each kind of fault point once.
faults=(checkpoint-write:1 eval:1 step:3 checkpoint-write:2 eval:2 step:$((ref_steps / 2)))
for i in $(seq 1 "$kills"); do
  name="run$i"
  if [ $((i % 2)) -eq 1 ] && [ $(((i - 1) / 2)) -lt ${#faults[@]} ]; then
    how="SLOWPIPE_FAULT=${faults[$(((i - 1) / 2))]}"
    env "$how" "$bin" train "${opts[@]}" --set run.progress=none --out "$work/$name.h5" \
      --set run.save="$work/$name.pt" >>"$work/$name.log" 2>&1
  else
    # A random point of the training: after the fixed cost, 0% to 95% of the
    # reference's stepping time.
    delay_ms=$((fixed_ms + (ref_ms - fixed_ms) * (RANDOM % 96) / 100))
    how="kill -9 after ${delay_ms} ms"
    "$bin" train "${opts[@]}" --set run.progress=none --out "$work/$name.h5" \
      --set run.save="$work/$name.pt" >>"$work/$name.log" 2>&1 &
    pid=$!
    sleep "$(awk -v ms="$delay_ms" 'BEGIN{printf "%.3f", ms/1000}')"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  # Resume until complete (a run killed before its log held its configuration
  # starts again from scratch, as a user would).
  attr() { awk -F'\t' -v k="$1" '$1==k{print $2}' <<<"$attrs"; }
  for attempt in 1 2 3 4; do
    attrs=$("$bin" export "$work/$name.h5" --attrs 2>/dev/null)
    [ "$(attr status)" = "complete" ] && break
    [ "$attempt" -eq 4 ] && break
    if grep -q '^config\.' <<<"$attrs"; then
      "$bin" train --resume "$work/$name.h5" --set run.progress=none >>"$work/$name.log" 2>&1
    else
      run_train "$name" --set run.overwrite=true
    fi
  done
  resumed=$(attr resumed_at_steps)
  problem=""
  if [ "$(attr status)" != "complete" ]; then
    problem="did not complete (see $name.log)"
  elif ! cmp -s <(comparable "$work/$name.h5" train) "$work/ref.train"; then
    problem="train table differs: $(diff <(comparable "$work/$name.h5" train) "$work/ref.train" | head -3 | tr '\n' ' ')"
  elif ! cmp -s <(comparable "$work/$name.h5" eval) "$work/ref.eval"; then
    problem="eval table differs"
  elif ! cmp -s "$work/$name.pt" "$work/ref.pt"; then
    problem="final weights differ"
  fi
  if [ -z "$problem" ]; then
    passed=$((passed + 1))
    echo "kill-resume: attempt $i ($how; resumed at steps ${resumed:-none}): identical"
  else
    failed=$((failed + 1))
    echo "kill-resume: attempt $i ($how; resumed at steps ${resumed:-none}): $problem" >&2
    tail -3 "$work/$name.log" >&2
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
