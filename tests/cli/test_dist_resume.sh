#!/usr/bin/env bash
# Distributed resume (docs/distributed.md, "Resume"): 4 processes (2 stages x
# 2 replicas, 1F1B) with AQ-SGD activations, 8-bit gradients and an
# error-feedback gradient exchange, resume checkpoints every 2 steps, stopped
# three ways at a random step, then continued with `launch --resume RUN.h5`
# (or hand-started ranks, as under Slurm). Each resumed log's train and eval
# rows equal an uninterrupted single-process run's bit for bit (which
# test_dist shows equal to an uninterrupted distributed run):
#   - rank 0 killed (SIGKILL) at a random step;
#   - another rank killed at a random step, resumed by hand-started ranks;
#   - launch itself killed: its workers die with it, then launch --resume;
#   - the momentum exchange (ef(q8) both ways): rank 0 killed, resumed;
#   - interleaved virtual stages (2 chunks per process): rank 0 killed, resumed;
#   - a learned projection (model.bottleneck = learned:...): rank 0 killed, resumed.
# And: resuming with another number of processes is refused with the reason.
# Usage: test_dist_resume.sh PATH/TO/slowpipe SOURCE_DIR
bin="$1"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

python3 -c "print('the quick brown fox jumps over the lazy dog. ' * 4000)" >corpus.txt
steps=40
run=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
     --set data.name=text --set data.path=corpus.txt --set pipeline.batch_size=8
     --set eval.batches=2 --set eval.every=7 --set run.progress=none --set run.steps=$steps
     --set run.overwrite=true --set dist.timeout=5s --set run.flush_every=1
     --set pipeline.stages=2 --set pipeline.replicas=2 --set pipeline.microbatches=2
     --set pipeline.schedule=1f1b --fw 'aq(q2)' --bw q8 --grad 'ef(q4)'
     --set run.checkpoint_every=2)

# cols RUN.h5 TABLE: the columns that must not move across a resume, as TSV.
cols() {
  "$bin" export "$1" --table "$2" | awk -F'\t' '
    NR == 1 { for (i = 1; i <= NF; i++)
                if ($i ~ /^(step|epoch|loss|lr|grad_norm|samples|sim_time_s|(fw|bw|grad)[0-9]+_(bytes|rel_error)|bits_per_byte|loss_compressed)$/) keep[++n] = i }
    { line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? "\t" : "") $keep[j]; print line }'
}
attr() { "$bin" export "$1" --attrs | awk -F'\t' -v k="$2" '$1 == k { print $2 }'; }
rows() { "$bin" export "$1" 2>/dev/null | tail -n +2 | wc -l; }
# until_rows H5 N: waits (at most 60 s) until the log holds N train rows.
until_rows() {
  for _ in $(seq 1 600); do
    [ -f "$1" ] && [ "$(rows "$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
# same_as_reference NAME H5: a complete log whose rows equal ref.h5's.
same_as_reference() {
  [ "$(attr "$2" status)" = "complete" ] && ok || bad "$1: status $(attr "$2" status), not complete"
  local r
  r=$(attr "$2" resumed_at_steps)
  [ -n "$r" ] && [ "$r" -ge 2 ] && ok || bad "$1: resumed_at_steps is '$r', not a checkpoint's step"
  for t in train eval; do
    cols ref.h5 "$t" >"ref.$t"
    cols "$2" "$t" >"$1.$t"
    if [ "$(wc -l <"ref.$t")" -ge 3 ] && cmp -s "ref.$t" "$1.$t"; then
      ok
    else
      bad "$1: $t rows differ from the uninterrupted run: $(diff "ref.$t" "$1.$t" | head -4)"
    fi
  done
}

# rank0_killed NAME ARGS...: the run with ARGS in one process (ref.h5), then
# under launch with rank 0 killed during a random step past the warm-ups
# (SLOWPIPE_FAULT kills the process that counts the steps: rank 0; launch
# marks the log failed), then `launch --resume` (N from the log), compared.
rank0_killed() {
  local name="$1" k=$((8 + RANDOM % 28))
  shift
  echo "test_dist_resume: $name: rank 0 killed in step $k" >&2
  "$bin" train "${run[@]}" "$@" --out ref.h5 >/dev/null 2>&1 || bad "$name: the reference failed"
  SLOWPIPE_FAULT=step:$k "$bin" launch --nproc 4 -- "${run[@]}" "$@" --out "$name.h5" >"$name.log" 2>&1
  [ "$(attr "$name.h5" status)" = "failed" ] && ok ||
    bad "$name: status $(attr "$name.h5" status) after rank 0 was killed, not failed"
  expect 0 "the logged run's 2 stage(s) x 2 replica(s)" -- "$bin" launch --resume "$name.h5"
  same_as_reference "$name" "$name.h5"
}

rank0_killed rank0

# Another rank killed after a random number of logged steps; the run is
# resumed by hand-started ranks with torchrun's variables (as Slurm starts them).
k=$((3 + RANDOM % 25))
victim=$((1 + RANDOM % 3))
echo "test_dist_resume: rank $victim killed after $k logged steps" >&2
"$bin" launch --nproc 4 -- "${run[@]}" --out b.h5 >b.log 2>&1 &
launcher=$!
if until_rows b.h5 "$k" && [ -n "$(rank_pid "$launcher" "$victim")" ]; then
  kill -9 "$(rank_pid "$launcher" "$victim")"
  wait "$launcher"
  if [ "$(attr b.h5 status)" = "complete" ]; then
    echo "test_dist_resume: the run ended before the kill; nothing to resume" >&2
  else
    [ "$(attr b.h5 status)" = "failed" ] && ok || bad "rank $victim killed: status $(attr b.h5 status)"
    port=$(free_port)
    for r in 1 2 3; do
      ( WORLD_SIZE=4 RANK=$r MASTER_PORT=$port timeout 120 "$bin" train --resume b.h5 >/dev/null 2>&1 ) &
    done
    WORLD_SIZE=4 RANK=0 MASTER_PORT=$port timeout 120 "$bin" train --resume b.h5 >b2.log 2>&1 ||
      bad "hand-started resume failed: $(tail -2 b2.log)"
    wait
    same_as_reference rank"$victim" b.h5
  fi
else
  bad "rank $victim not found or fewer than $k steps logged"
  kill "$launcher" 2>/dev/null
  wait
fi

# launch itself killed (SIGKILL): its workers die with it; launch --resume.
k=$((3 + RANDOM % 25))
echo "test_dist_resume: launch killed after $k logged steps" >&2
"$bin" launch --nproc 4 -- "${run[@]}" --out c.h5 >c.log 2>&1 &
launcher=$!
if until_rows c.h5 "$k"; then
  workers=$(pgrep -P "$launcher")
  kill -9 "$launcher"
  wait "$launcher" 2>/dev/null
  for _ in $(seq 1 150); do
    alive=0
    for p in $workers; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  [ "$alive" -eq 0 ] && ok || bad "launch killed: workers still alive after 15 s"
  if [ "$(attr c.h5 status)" != "complete" ]; then
    expect 0 "" -- "$bin" launch --nproc 4 --resume c.h5
    same_as_reference launch c.h5
  fi
else
  bad "launch kill: fewer than $k steps logged"
  kill "$launcher" 2>/dev/null
  wait
fi

# The momentum exchange (its worker and server channels' error feedback in
# the checkpoint), and interleaved virtual stages (2 chunks per process).
rank0_killed momentum --set compress.grad_sync=momentum --set compress.momentum_warmup_steps=5 \
  --set 'compress.grad=ef(q8)'
rank0_killed interleaved --set model.layers=4 --set pipeline.schedule=interleaved \
  --set pipeline.virtual_stages=2
# A learned projection: the reader's copy of U and the anchors comes from the
# owner's restored values.
rank0_killed learned --set model.bottleneck=learned:k=4:anchor=4

# Resumed with another number of processes: refused, naming the key.
SLOWPIPE_FAULT=step:3 "$bin" launch --nproc 4 -- "${run[@]}" --out d.h5 >/dev/null 2>&1
expect 2 "dist.world_size = 2 processes, but pipeline.stages x pipeline.replicas = 2 x 2 = 4" -- "$bin" launch --nproc 2 --resume d.h5

finish test_dist_resume
