#!/usr/bin/env bash
# Distributed runs (slowpipe launch, docs/distributed.md):
#   - 4 processes on localhost (2 stages x 2 replicas, 1F1B, 2 micro-batches)
#     give the single-process run's losses, learning rates, gradient norms,
#     byte counts and relative errors bit for bit, for fp32, q2, aq(q2) and ef(topk:0.1) with a
#     compressed gradient exchange; eval losses too; 4 stages with a
#     topk:shared backward and AQ-SGD alike; zb-h1 (split backwards) with 2x2
#     and 4 stages alike; the momentum exchange (AdamW with ef(q8), SGD with
#     momentum uncompressed) alike; interleaved virtual stages (2 chunks per
#     process: 2 stages, 2x2 with ef(q4) and with the momentum exchange, 3
#     stages with topk:shared) alike; a subspace-constrained GPT
#     (model.subspace, k coefficients across each cut) alike; Muon (both
#     variants, 2 and 4 processes) alike; ResBM (model.bottleneck) alike; a
#     learned projection (read on both sides of a cut: 2x2 1F1B, 4 stages
#     zb-h1, interleaved) alike;
#   - a rank killed with SIGKILL: every other rank exits within the promised
#     time, naming the dead rank and the step; the log is readable, status failed;
#   - a rank stopped with SIGSTOP (a vanished host): rank 0 logs status failed
#     naming it, launch kills it and ends within about 2 x dist.timeout; the
#     workers' lines carry their rank;
#   - rank 0 killed under launch: launch marks the log failed, naming rank 0
#     and the step; launch itself killed (SIGKILL): its workers die with it
#     within 2 x dist.timeout, rank 0 logging why;
#   - rank 0 of hand-started ranks killed: the log stays `running`, and
#     export/summary say that its heartbeat is stale;
#   - a stray duplicate of a rank, started while the run trains: refused
#     (exit 2), the run completes undisturbed;
#   - refused at start-up: mismatched configurations (both values named), a
#     wrong --nproc, the momentum exchange with an optimizer
#     that has no momentum, a rank started twice, a port another process holds (and a
#     second launch on a port in use, which leaves the first run alone);
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
# Relative errors too: the sender decodes its message with a copy of the
# receiver's half (NaN for a topk:shared backward: shared_cols below).
train_cols='^(step|loss|lr|grad_norm|samples|(fw|bw|grad)[0-9]+_(bytes|rel_error))$'
shared_cols='^(step|loss|lr|grad_norm|samples|(fw|bw|grad)[0-9]+_bytes|fw[0-9]+_rel_error)$'
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
  [ "$(attr "$name-n.h5" dist.backend)" = "gloo" ] && ok ||
    bad "$name: dist.backend is '$(attr "$name-n.h5" dist.backend)', not the backend used (gloo)"
  for t in train eval; do
    local pat=${pattern:-$train_cols}
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
pattern=$shared_cols same_as_single shared 4 --set model.layers=4 --set pipeline.stages=4 --set pipeline.microbatches=4 \
  --fw 'aq(topk:0.3)' --bw 'topk:shared+q8'
# zb-h1 (split backwards: an input pass, then a weight pass from the kept graph).
same_as_single zb-h1 4 "${dp[@]}" --set pipeline.schedule=zb-h1 --fw 'aq(q2)' --bw q8 --grad 'ef(q4)'
pattern=$shared_cols same_as_single zb-h1-4 4 --set model.layers=4 --set pipeline.stages=4 \
  --set pipeline.microbatches=4 --set pipeline.schedule=zb-h1 --fw 'aq(topk:0.3)' --bw 'topk:shared+q8'
# Interleaved virtual stages: each process holds v chunks (chunk c on device
# c mod S), messages between chunks on different devices, both directions
# between the same two ranks; with replicas, with the momentum exchange, and
# 3 devices x 2 chunks with a topk:shared backward.
inter=(--set model.layers=4 --set pipeline.schedule=interleaved --set pipeline.virtual_stages=2)
same_as_single interleaved 2 "${inter[@]}" --set pipeline.stages=2 --set pipeline.microbatches=4 \
  --fw 'aq(q2)' --bw q8
same_as_single interleaved-dp 4 "${dp[@]}" "${inter[@]}" --fw q4 --bw q8 --grad 'ef(q4)'
same_as_single interleaved-momentum 4 "${dp[@]}" "${inter[@]}" --fw q4 --bw q8 \
  --set compress.grad_sync=momentum --set compress.momentum_warmup_steps=2 --set 'compress.grad=ef(q8)'
pattern=$shared_cols same_as_single interleaved-3 3 "${inter[@]}" --set model.layers=6 \
  --set pipeline.stages=3 --set pipeline.microbatches=3 --set pipeline.batch_size=6 \
  --fw 'aq(topk:0.3)' --bw 'topk:shared+q8'
# The momentum exchange (sharded, parameter-server style, after its warm-up):
# AdamW with an ef(q8) exchange, SGD with momentum uncompressed.
mom=(--set compress.grad_sync=momentum --set compress.momentum_warmup_steps=2)
same_as_single momentum 4 "${dp[@]}" "${mom[@]}" --fw q4 --bw q8 --grad 'ef(q8)'
same_as_single momentum-sgd 4 "${dp[@]}" "${mom[@]}" --set optim.name=sgd --set optim.momentum=0.9 \
  --fw none --bw none --grad none
same_as_single subspace 4 "${dp[@]}" --set model.subspace=4 --fw q8 --bw none --grad none
# ResBM (model.bottleneck, docs/models.md): the cut carries 4 values per token.
same_as_single resbm 4 "${dp[@]}" --set model.bottleneck=resbm:r=4 --fw q8 --bw q8 --grad none
# A learned projection (U and anchors read on both sides of each cut): the
# reader's gradient contributions go back to the owner, which adds them in one
# process's op order, and the new values go forward (docs/distributed.md):
# 2 x 2 with 1F1B, 4 stages with zb-h1 (split backwards), interleaved chunks.
lp=(--set model.bottleneck=learned:k=4:anchor=4)
same_as_single learned 4 "${dp[@]}" "${lp[@]}" --fw q8 --bw q8 --grad none
same_as_single learned-zb 4 --set model.layers=4 --set pipeline.stages=4 \
  --set pipeline.microbatches=4 --set pipeline.schedule=zb-h1 "${lp[@]}" --fw 'aq(q4)' --bw q8
same_as_single learned-inter 2 "${inter[@]}" --set pipeline.stages=2 \
  --set pipeline.microbatches=4 "${lp[@]}" --fw q8 --bw q8
# Muon (docs/optimizers.md): 2 processes (2 stages), and 2 x 2 with the other variant.
muon=(--set optim.name=muon --set optim.lr=0.02 --set optim.schedule=stable-linear)
same_as_single muon 2 --set pipeline.stages=2 --set pipeline.microbatches=2 \
  --set pipeline.schedule=1f1b "${muon[@]}"
same_as_single muon-dp 4 "${dp[@]}" "${muon[@]}" --set optim.muon_variant=canonical --fw q8
# The control: another seed gives other losses (the comparison can fail).
"$bin" train "${small[@]}" "${dp[@]}" --seed 2 --out other.h5 >/dev/null 2>&1
cols other.h5 train '^(step|loss)$' >other.train
cut -f1-2 fp32-1.train | cmp -s - other.train && bad "another seed gave the same losses" || ok

# started H5: waits (at most 30 s) until the log holds 3 rows; false otherwise.
started() {
  for _ in $(seq 1 300); do
    [ -f "$1" ] && [ "$("$bin" export "$1" 2>/dev/null | wc -l)" -ge 4 ] && return 0
    sleep 0.1
  done
  return 1
}
now() { date +%s.%N; }
# within START LIMIT: the seconds since START (printed to stderr), and whether they are <= LIMIT.
within() {
  local took
  took=$(awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  echo "test_dist: $3 took $took s (limit $2 s)" >&2
  awk -v t="$took" -v l="$2" 'BEGIN { exit !(t <= l) }'
}

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

# A rank stopped with SIGSTOP keeps its connections open, as a vanished host
# does: rank 0's watchdog names it after dist.timeout (3 s), rank 0 logs the
# failure, and launch kills the stopped rank (SIGTERM cannot reach it): all
# within about 2 x dist.timeout. Every worker's lines carry its rank.
fast=(--set dist.timeout=3s --set run.steps=100000 --set eval.every=0 --set run.flush_every=1)
"$bin" launch --nproc 4 -- "${small[@]}" "${dp[@]}" "${fast[@]}" --out stopped.h5 >stopped.log 2>&1 &
launcher=$!
victim=""
started stopped.h5 && victim=$(rank_pid "$launcher" 3)
if [ -z "$victim" ]; then
  bad "stop test: rank 3 not found or no steps logged"
  kill "$launcher" 2>/dev/null
else
  kill -STOP "$victim"
  start=$(now)
  timeout 60 tail -s 0.1 --pid="$launcher" -f /dev/null
  within "$start" 9 "SIGSTOP: launch's exit (dist.timeout 3 s)" && ok ||
    bad "stop test: launch took too long to end after a rank was stopped"
  wait "$launcher"
  rc=$?
  [ "$rc" -ne 0 ] && ok || bad "stop test: launch exited 0"
  [ "$(attr stopped.h5 status)" = "failed" ] && ok || bad "stop test: log status is '$(attr stopped.h5 status)', not failed"
  attr stopped.h5 error | grep -q "rank 3 (replica 1, stage 1) stopped responding" && ok ||
    bad "stop test: log error does not name rank 3: $(attr stopped.h5 error)"
  grep -q "slowpipe launch: rank 3 did not end within .* killed" stopped.log && ok ||
    bad "stop test: launch does not say it killed rank 3: $(tail -3 stopped.log)"
  [ ! -e "/proc/$victim" ] || grep -q '^State:.*Z' "/proc/$victim/status" 2>/dev/null && ok ||
    bad "stop test: the stopped rank is still there"
  grep -q '^\[rank 0\] slowpipe train: failed: rank 3 ' stopped.log &&
    grep -q '^\[rank 1\] slowpipe train: rank 1 (replica 0, stage 1) stops: rank 3 ' stopped.log &&
    ! grep -q '^slowpipe train' stopped.log && ok ||
    bad "stop test: the workers' lines do not say which rank printed them: $(grep -v '^slowpipe launch' stopped.log | tail -3)"
fi

# Rank 0 killed under launch: the others end at once, and launch marks the
# log failed, naming rank 0 and the step (rank 0 could not).
"$bin" launch --nproc 2 -- "${small[@]}" --set pipeline.stages=2 "${fast[@]}" --out dead0l.h5 >dead0l.log 2>&1 &
launcher=$!
victim=""
started dead0l.h5 && victim=$(rank_pid "$launcher" 0)
if [ -z "$victim" ]; then
  bad "rank 0 kill test (launch): rank 0 not found or no steps logged"
  kill "$launcher" 2>/dev/null
else
  kill -9 "$victim"
  start=$(now)
  timeout 60 tail -s 0.1 --pid="$launcher" -f /dev/null
  within "$start" 5 "rank 0 killed under launch: launch's exit" && ok || bad "rank 0 kill test (launch): too slow"
  wait "$launcher"
  [ "$(attr dead0l.h5 status)" = "failed" ] && ok || bad "rank 0 kill test (launch): log is '$(attr dead0l.h5 status)', not failed"
  attr dead0l.h5 error | grep -Eq '^rank 0 \(replica 0, stage 0\) died \(signal 9, SIGKILL\) after step [0-9]+' && ok ||
    bad "rank 0 kill test (launch): error '$(attr dead0l.h5 error)'"
fi

# Launch itself killed (SIGKILL): its workers die with it, within 2 x
# dist.timeout; rank 0 logs why.
"$bin" launch --nproc 2 -- "${small[@]}" --set pipeline.stages=2 "${fast[@]}" --out orphan.h5 >orphan.log 2>&1 &
launcher=$!
workers=""
started orphan.h5 && workers="$(pgrep -P "$launcher" | tr '\n' ' ')"
if [ -z "$workers" ]; then
  bad "launch kill test: no workers or no steps logged"
  kill "$launcher" 2>/dev/null
else
  kill -9 "$launcher"
  start=$(now)
  for _ in $(seq 1 200); do
    alive=""
    for p in $workers; do
      [ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && alive="$alive $p"
    done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  [ -z "$alive" ] && within "$start" 6 "launch killed: its workers' end (2 x dist.timeout 3 s)" && ok ||
    bad "launch kill test: workers left running:$alive"
  kill -9 $alive 2>/dev/null
  [ "$(attr orphan.h5 status)" = "failed" ] && attr orphan.h5 error | grep -q "^slowpipe launch (pid $launcher) ended during step [0-9]" &&
    ok || bad "launch kill test: log status '$(attr orphan.h5 status)', error '$(attr orphan.h5 error)'"
fi
wait "$launcher" 2>/dev/null

# Rank 0 of ranks started by hand killed: the others end at once; its log
# stays `running`, which export and summary qualify once the heartbeat is
# older than the threshold.
port=$(free_port)
( WORLD_SIZE=2 RANK=1 MASTER_PORT=$port "$bin" train "${small[@]}" --set pipeline.stages=2 "${fast[@]}" \
    --out dead0.h5 >dead0.1.log 2>&1 ) &
rank1=$!
WORLD_SIZE=2 RANK=0 MASTER_PORT=$port "$bin" train "${small[@]}" --set pipeline.stages=2 "${fast[@]}" \
  --out dead0.h5 >dead0.log 2>&1 &
victim=$!
if ! started dead0.h5; then
  bad "rank 0 kill test: no steps logged"
  kill "$victim" "$rank1" 2>/dev/null
else
  kill -9 "$victim"
  start=$(now)
  timeout 60 tail -s 0.1 --pid="$rank1" -f /dev/null
  within "$start" 5 "rank 0 killed: rank 1's exit" && ok || bad "rank 0 kill test: rank 1 took too long"
  wait "$rank1" 2>/dev/null
  [ "$(attr dead0.h5 status)" = "running" ] && ok || bad "rank 0 kill test: fresh log is '$(attr dead0.h5 status)', not running"
  attr dead0.h5 heartbeat | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$' && ok ||
    bad "rank 0 kill test: no heartbeat attribute: '$(attr dead0.h5 heartbeat)'"
  sleep 2
  SLOWPIPE_HEARTBEAT_STALE_S=1 attr dead0.h5 status | grep -Eq '^running \(no heartbeat since .*Z, [0-9]+ s ago\)$' && ok ||
    bad "rank 0 kill test: export --attrs shows '$(SLOWPIPE_HEARTBEAT_STALE_S=1 attr dead0.h5 status)'"
  SLOWPIPE_HEARTBEAT_STALE_S=1 "$bin" summary dead0.h5 --wide 2>&1 | grep -q "running (no heartbeat since" && ok ||
    bad "rank 0 kill test: summary --wide does not show the stale heartbeat"
  # The default (100-column) table abbreviates it to `stale`, with a note.
  SLOWPIPE_HEARTBEAT_STALE_S=1 "$bin" summary dead0.h5 >dead0.summary 2>&1
  grep -Eq '(^| )stale( |$)' dead0.summary && grep -q "^stale: status running, but no heartbeat" dead0.summary && ok ||
    bad "rank 0 kill test: summary does not mark the run stale: $(cat dead0.summary)"
  SLOWPIPE_HEARTBEAT_STALE_S=1 "$bin" export dead0.h5 2>&1 >/dev/null | grep -q "no heartbeat since .* the run most likely died" && ok ||
    bad "rank 0 kill test: export of the table does not warn"
  # Control: a finished run's status is never qualified.
  [ "$(SLOWPIPE_HEARTBEAT_STALE_S=0 attr fp32-n.h5 status)" = "complete" ] && ok || bad "a complete log shown as not complete"
fi
wait 2>/dev/null

# A stray process with a rank already in use, started once the run trains:
# refused (exit 2) without touching the run, which completes.
port=$(free_port)
for r in 0 1; do
  ( WORLD_SIZE=2 RANK=$r MASTER_PORT=$port "$bin" train "${small[@]}" --set pipeline.stages=2 \
      --set dist.timeout=3s --set run.steps=600 --set eval.every=0 --set run.flush_every=1 \
      --out stray.h5 >"stray.$r.log" 2>&1 ) &
done
if started stray.h5; then
  expect 2 "ranks have all joined already; this process (RANK=1) is not part of it" -- \
    env WORLD_SIZE=2 RANK=1 MASTER_PORT=$port timeout 60 "$bin" train "${small[@]}" --set pipeline.stages=2 \
    --set dist.timeout=3s --set run.steps=600 --out stray.h5
  wait
  [ "$(attr stray.h5 status)" = "complete" ] && ok ||
    bad "a stray rank disturbed the running job: status $(attr stray.h5 status): $(tail -2 stray.0.log)"
else
  bad "stray test: the run did not start"
  wait
fi

# Refused at start-up.
expect 2 "pipeline.stages x pipeline.replicas" -- "$bin" launch --nproc 3 -- "${small[@]}" "${dp[@]}" --out w.h5
expect 2 "needs --nproc" -- "$bin" launch -- "${small[@]}"
expect 2 "exchanges the optimizer's momentum, but" -- "$bin" launch --nproc 4 -- "${small[@]}" \
  "${dp[@]}" --set compress.grad_sync=momentum --set optim.name=sgd --set optim.momentum=0 --out g.h5
port=$(free_port)
# Every rank exits 2 (the documented code of a usage error), whichever of
# its threads reads the reason first: tried three times.
for k in 1 2 3; do
  ( WORLD_SIZE=2 RANK=1 MASTER_PORT=$port "$bin" train "${small[@]}" --set pipeline.stages=2 --seed 2 \
      --out m.h5 >m1.log 2>&1
    echo $? >m1.rc ) &
  expect 2 "runs another configuration than rank 0 (run.seed=2 (rank 0: 1))" -- \
    env WORLD_SIZE=2 RANK=0 MASTER_PORT=$port "$bin" train "${small[@]}" --set pipeline.stages=2 --out m.h5
  wait
  [ "$(cat m1.rc)" = 2 ] && ok || bad "another configuration: rank 1 exited $(cat m1.rc), not 2: $(tail -1 m1.log)"
  port=$(free_port)
done
start=$(date +%s)
expect 1 "could not reach the rendezvous" -- env WORLD_SIZE=2 RANK=1 MASTER_PORT=$(free_port) \
  "$bin" train "${small[@]}" --set pipeline.stages=2 --set dist.timeout=2s --out r.h5
[ $(($(date +%s) - start)) -le 15 ] && ok || bad "rendezvous timeout took too long"
expect 1 "only 1 of 2 ranks joined" -- env WORLD_SIZE=2 RANK=0 MASTER_PORT=$(free_port) \
  "$bin" train "${small[@]}" --set pipeline.stages=2 --set dist.timeout=2s --out r.h5

# Two processes started as rank 1 (and none as 3): refused at the rendezvous,
# every process exits 2 naming the rank, within dist.timeout.
port=$(free_port)
start=$(now)
for r in 0 1 1 2; do
  ( WORLD_SIZE=4 RANK=$r MASTER_PORT=$port timeout 60 "$bin" train "${small[@]}" "${dp[@]}" \
      --set dist.timeout=3s --out dup.h5 >"dup.$r.$BASHPID.log" 2>&1
    echo $? >"dup.$r.$BASHPID.rc" ) &
done
wait
within "$start" 10 "a doubled rank: every process's exit" && ok || bad "a doubled rank: too slow to refuse"
# Ranks 0 and 1 exit 2 naming rank 1; rank 2 too, unless it started after
# rank 0 had gone (then it cannot reach the rendezvous: exit 1).
[ "$(cat dup.0.*.rc dup.1.*.rc | tr -d '\n')" = "222" ] && grep -q '^[12]$' dup.2.*.rc && ok ||
  bad "a doubled rank: exit codes $(cat dup.*.rc | tr '\n' ' ') (expected 2 for ranks 0 and 1)"
[ "$(grep -l "rank 1 was started twice" dup.0.*.log dup.1.*.log | wc -l)" -eq 3 ] && ok ||
  bad "a doubled rank: not named: $(cat dup.*.log | grep -v '^[WE]2026' | head -4)"

# A port another process holds: rank 0 cannot serve it; launch ends with
# rank 0's "Address already in use" within dist.timeout; a rank started by
# hand against it gives up within dist.timeout too.
port=$(free_port)
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(16); s.settimeout(0.2); held = []
end = time.time() + 60
while time.time() < end:
    try: held.append(s.accept()[0])
    except socket.timeout: pass
" &
holder=$!
sleep 0.5
start=$(now)
timeout 60 "$bin" launch --nproc 2 --port "$port" -- "${small[@]}" \
  --set pipeline.stages=2 --set dist.timeout=3s --out taken.h5 >taken.log 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "Address already in use" taken.log && ok ||
  bad "a port in use: launch exited $rc: $(tail -2 taken.log)"
within "$start" 10 "a port in use: launch's exit" && ok || bad "a port in use: launch too slow"
# c10d's own (glog) lines stay out of the terminal unless dist.verbose asks.
! grep -Eq '^\[rank [0-9]+\] ([WE][0-9]{8} |WARNING: Logging before)' taken.log && ok ||
  bad "a port in use: raw c10d log lines shown: $(grep -E '^\[rank [0-9]+\] [WE][0-9]{8}' taken.log | head -1)"
timeout 60 "$bin" launch --nproc 2 --port "$port" -- "${small[@]}" --set pipeline.stages=2 \
  --set dist.timeout=3s --set dist.verbose=true --out taken.h5 >taken-v.log 2>&1
grep -Eq '^\[rank 0\] [WE][0-9]{8} .*c10d' taken-v.log && ok ||
  bad "dist.verbose=true: c10d's lines not shown: $(head -3 taken-v.log)"
start=$(now)
expect 1 "rank 1 (replica 0, stage 1): lost the rendezvous" -- env WORLD_SIZE=2 RANK=1 MASTER_PORT="$port" \
  timeout 60 "$bin" train "${small[@]}" --set pipeline.stages=2 --set dist.timeout=3s --out taken.h5
within "$start" 10 "a port in use: a hand-started rank's exit" && ok || bad "a port in use: rank 1 too slow"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
# A second launch on the port of a running one: refused at once, and the
# first run goes on undisturbed (it ends interrupted by our SIGTERM, not failed).
port=$(free_port)
"$bin" launch --nproc 2 --port "$port" -- "${small[@]}" --set pipeline.stages=2 "${fast[@]}" \
  --out first.h5 >first.log 2>&1 &
launcher=$!
if started first.h5; then
  start=$(now)
  expect 2 "belongs to another run" -- timeout 60 "$bin" launch --nproc 2 --port "$port" -- \
    "${small[@]}" --set pipeline.stages=2 --set dist.timeout=3s --out second.h5
  within "$start" 10 "a second launch on a port in use: its exit" && ok || bad "second launch too slow"
  kill -TERM "$launcher"
  timeout 60 tail -s 0.1 --pid="$launcher" -f /dev/null
  [ "$(attr first.h5 status)" = "interrupted" ] && ok ||
    bad "the first run was disturbed by the second launch: status $(attr first.h5 status): $(tail -2 first.log)"
else
  bad "second launch test: the first run did not start"
  kill "$launcher" 2>/dev/null
fi
wait "$launcher" 2>/dev/null

# Divergence: exit 4, status diverged, the place named as in one process.
div=(--set pipeline.stages=2 --steps 30 --set optim.name=sgd --set optim.lr=100 --set optim.clip=0
     --set optim.momentum=0.99)
expect 4 "non-finite" -- "$bin" launch --nproc 2 -- "${small[@]}" "${div[@]}" --out div.h5
[ "$(attr div.h5 status)" = "diverged" ] && ok || bad "distributed diverged run not marked diverged"
"$bin" train "${small[@]}" "${div[@]}" --out div1.h5 >/dev/null 2>&1
[ "$(attr div.h5 error)" = "$(attr div1.h5 error)" ] && ok ||
  bad "diverged at another place than in one process: $(attr div.h5 error)"

finish test_dist
