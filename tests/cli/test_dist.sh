#!/usr/bin/env bash
# Distributed runs (slowpipe launch, docs/distributed.md):
#   - 4 processes on localhost (2 stages x 2 replicas, 1F1B, 2 micro-batches)
#     give the single-process run's losses, learning rates, gradient norms and
#     byte counts bit for bit, for fp32, q2, aq(q2) and ef(topk:0.1) with a
#     compressed gradient exchange; eval losses too; 4 stages with a
#     topk:shared backward and AQ-SGD alike;
#   - a rank killed with SIGKILL: every other rank exits within the promised
#     time, naming the dead rank and the step; the log is readable, status failed;
#   - refused at start-up: mismatched configurations, a wrong --nproc, resume,
#     split backwards, virtual stages, the momentum exchange;
#     an unreachable rendezvous times out with a clear error;
#   - a diverged run (NaN on a rank) ends with exit 4 and status diverged.
# Usage: test_dist.sh PATH/TO/slowpipe SOURCE_DIR
bin="$1"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

python3 -c "print('the quick brown fox jumps over the lazy dog. ' * 4000)" >corpus.txt
small=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
       --set data.name=text --set data.path=corpus.txt --set pipeline.batch_size=8
       --set eval.batches=2 --set eval.every=3 --set run.progress=none --set run.steps=6
       --set run.overwrite=true --set dist.timeout=5s)
dp=(--set pipeline.stages=2 --set pipeline.replicas=2 --set pipeline.microbatches=2
    --set pipeline.schedule=1f1b)

# cols RUN.h5 TABLE PATTERN: the columns whose names match PATTERN, as TSV.
cols() {
  "$bin" export "$1" --table "$2" | awk -F'\t' -v pat="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ pat) keep[++n] = i }
    { line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? "\t" : "") $keep[j]; print line }'
}
attr() { "$bin" export "$1" --attrs | awk -F'\t' -v k="$2" '$1 == k { print $2 }'; }
train_cols='^(step|loss|lr|grad_norm|samples|(fw|bw|grad)[0-9]+_bytes)$'
eval_cols='^(step|loss|bits_per_byte|loss_compressed|bits_per_byte_compressed)$'

# same_as_single NAME ARGS...: one process and `launch` give the same rows.
same_as_single() {
  local name="$1" nproc="$2"
  shift 2
  "$bin" train "${small[@]}" "$@" --out "$name-1.h5" >/dev/null 2>&1 || { bad "$name: single-process run failed"; return; }
  local out
  out=$("$bin" launch --nproc "$nproc" -- "${small[@]}" "$@" --out "$name-n.h5" 2>&1) ||
    { bad "$name: distributed run failed: $(tail -3 <<<"$out")"; return; }
  [ "$(attr "$name-n.h5" status)" = "complete" ] && ok || bad "$name: distributed run not complete"
  [ "$(attr "$name-n.h5" dist.world_size)" = "$nproc" ] && ok || bad "$name: dist.world_size not logged"
  for t in train eval; do
    local pat=$train_cols
    [ "$t" = eval ] && pat=$eval_cols
    cols "$name-1.h5" "$t" "$pat" >"$name-1.$t"
    cols "$name-n.h5" "$t" "$pat" >"$name-n.$t"
    if [ "$(wc -l <"$name-1.$t")" -ge 3 ] && cmp -s "$name-1.$t" "$name-n.$t"; then
      ok
    else
      bad "$name: $t rows differ from the single-process run: $(diff "$name-1.$t" "$name-n.$t" | head -4)"
    fi
  done
  # The measured time and the bytes handed to c10d sit beside the simulated time.
  cols "$name-n.h5" train '^(dist_step_time_s|fw0_sent_bytes|sim_step_time_s)$' | tail -n +2 |
    awk -F'\t' '$1 > 0 && $2 > 0 && $3 > 0 { n++ } END { exit !(n >= 6) }' &&
    ok || bad "$name: dist_step_time_s / fw0_sent_bytes / sim_step_time_s missing"
}

same_as_single fp32 4 "${dp[@]}" --fw none --bw none --grad none
same_as_single q2 4 "${dp[@]}" --fw q2 --bw q2 --grad q8
same_as_single aq 4 "${dp[@]}" --fw 'aq(q2)' --bw q4 --grad none
same_as_single ef-topk 4 "${dp[@]}" --fw 'ef(topk:0.1)' --bw 'ef(topk:0.1)' --grad 'ef(q4)'
same_as_single shared 4 --set model.layers=4 --set pipeline.stages=4 --set pipeline.microbatches=4 \
  --fw 'aq(topk:0.3)' --bw 'topk:shared+q8'
# The control: another seed gives other losses (the comparison can fail).
"$bin" train "${small[@]}" "${dp[@]}" --seed 2 --out other.h5 >/dev/null 2>&1
cols other.h5 train '^(step|loss)$' >other.train
cut -f1-2 fp32-1.train | cmp -s - other.train && bad "another seed gave the same losses" || ok

# A rank killed mid-run: the others stop within dist.timeout (5 s) plus a
# margin, naming the dead rank and the step; the log is readable and failed.
"$bin" launch --nproc 4 -- "${small[@]}" "${dp[@]}" --set run.steps=100000 --set eval.every=0 \
  --set run.flush_every=1 --out killed.h5 >killed.log 2>&1 &
launcher=$!
victim=""
for _ in $(seq 1 300); do
  if [ -f killed.h5 ] && [ "$("$bin" export killed.h5 2>/dev/null | wc -l)" -ge 4 ]; then
    for p in $(pgrep -P "$launcher"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx RANK=3 && victim=$p
    done
    break
  fi
  sleep 0.1
done
if [ -z "$victim" ]; then
  bad "kill test: rank 3 not found or no steps logged"
  kill "$launcher" 2>/dev/null
else
  kill -9 "$victim"
  start=$(date +%s)
  wait "$launcher"
  rc=$?
  took=$(($(date +%s) - start))
  [ "$rc" -ne 0 ] && ok || bad "kill test: launch exited 0 after a rank was killed"
  [ "$took" -le 20 ] && ok || bad "kill test: the other ranks took $took s to stop (dist.timeout 5 s)"
  grep -q "rank 3 (replica 1, stage 1) stopped responding" killed.log && grep -q "during step [0-9]" killed.log &&
    ok || bad "kill test: no message naming rank 3 and the step: $(tail -3 killed.log)"
  [ "$(attr killed.h5 status)" = "failed" ] && ok || bad "kill test: log status is not failed"
  attr killed.h5 error | grep -q "rank 3" && ok || bad "kill test: log error does not name rank 3"
  [ "$("$bin" export killed.h5 | tail -n +2 | wc -l)" -ge 3 ] && ok || bad "kill test: rows lost"
  sleep 1
  [ -z "$(pgrep -P "$launcher")" ] && ok || bad "kill test: ranks left running"
fi

# Refused at start-up.
expect 2 "pipeline.stages x pipeline.replicas" -- "$bin" launch --nproc 3 -- "${small[@]}" "${dp[@]}" --out w.h5
expect 2 "cannot --resume" -- "$bin" launch --nproc 4 -- --resume fp32-n.h5
expect 2 "needs --nproc" -- "$bin" launch -- "${small[@]}"
expect 2 "run whole backwards" -- "$bin" launch --nproc 2 -- "${small[@]}" \
  --set pipeline.stages=2 --set pipeline.schedule=zb-h1 --out z.h5
expect 2 "one model chunk per process" -- "$bin" launch --nproc 2 -- "${small[@]}" \
  --set pipeline.stages=2 --set pipeline.schedule=interleaved --set pipeline.virtual_stages=2 \
  --set pipeline.microbatches=2 --out v.h5
expect 2 "run the momentum exchange in one process" -- "$bin" launch --nproc 4 -- "${small[@]}" \
  "${dp[@]}" --set compress.grad_sync=momentum --out g.h5
port=$((20000 + RANDOM % 20000))
( WORLD_SIZE=2 RANK=1 MASTER_PORT=$port "$bin" train "${small[@]}" --set pipeline.stages=2 --seed 2 \
    --out m.h5 >m1.log 2>&1 ) &
expect 2 "runs another configuration than rank 0 (run.seed=2)" -- \
  env WORLD_SIZE=2 RANK=0 MASTER_PORT=$port "$bin" train "${small[@]}" --set pipeline.stages=2 --out m.h5
wait
start=$(date +%s)
expect 1 "could not reach the rendezvous" -- env WORLD_SIZE=2 RANK=1 MASTER_PORT=$((port + 1)) \
  "$bin" train "${small[@]}" --set pipeline.stages=2 --set dist.timeout=2s --out r.h5
[ $(($(date +%s) - start)) -le 15 ] && ok || bad "rendezvous timeout took too long"
expect 1 "only 1 of 2 ranks joined" -- env WORLD_SIZE=2 RANK=0 MASTER_PORT=$((port + 2)) \
  "$bin" train "${small[@]}" --set pipeline.stages=2 --set dist.timeout=2s --out r.h5

# Divergence: exit 4, status diverged, the place named as in one process.
div=(--set pipeline.stages=2 --steps 30 --set optim.name=sgd --set optim.lr=100 --set optim.clip=0
     --set optim.momentum=0.99)
expect 4 "non-finite" -- "$bin" launch --nproc 2 -- "${small[@]}" "${div[@]}" --out div.h5
[ "$(attr div.h5 status)" = "diverged" ] && ok || bad "distributed diverged run not marked diverged"
"$bin" train "${small[@]}" "${div[@]}" --out div1.h5 >/dev/null 2>&1
[ "$(attr div.h5 error)" = "$(attr div1.h5 error)" ] && ok ||
  bad "diverged at another place than in one process: $(attr div.h5 error)"

finish test_dist
