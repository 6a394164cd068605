#!/usr/bin/env bash
# slowpipe sweep end to end, on a 2 x 2 x 2-seed grid of a tiny GPT (each point
# a few seconds, mostly start-up):
#  - bad sweep files exit 2 naming the problem, before anything runs;
#  - --point and --only: selectors that match nothing exit 2 listing what
#    exists; --dry-run lists the selected points with what a run would do;
#  - --emit-jobs writes every point's NAME.ini (output paths relative to it),
#    and its output runs unchanged under GNU parallel (and one line under
#    bash, as a Slurm array task would); a sweep over that folder then finds
#    every point complete and runs nothing;
#  - a copy of that folder reruns a point from its NAME.ini into the copy,
#    leaving the original's run log untouched;
#  - one point run in the foreground (--only), its output on the terminal and
#    in its .log, stopped with SIGTERM, resumed with --point into the same
#    files; it equals the uninterrupted run and the sweep sees it as done;
#  - the same grid run two points at a time, stopped with SIGTERM midway,
#    rerun and killed with SIGKILL midway, rerun to the end: each rerun skips
#    the complete points (their logs untouched) and resumes the interrupted
#    ones, no run outlives the SIGKILLed sweep, and every point's train and
#    eval tables equal the uninterrupted ones (compute time is fixed, so the
#    resume is bitwise; measured wall-clock columns excepted).
#   tests/cli/test_sweep.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
expect_grep=(-qF)
# wait_mid_run OUT DIR: until a point the sweep printing OUT started (and has
# not finished) has logged an evaluation at step 50 or later in this attempt
# (so it has checkpoints to resume from); 60 s at most.
wait_mid_run() {
  for _ in $(seq 1 600); do
    for n in $(sed -n 's/.*\] start  \([^ ]*\).*/\1/p' "$1"); do
      grep -q "done   $n " "$1" && continue
      awk '/^# slowpipe sweep/{f=0} /^eval @ step [0-9]+:/{if ($4+0 >= 50) f=1} END{exit !f}' \
        "$2/$n.log" 2>/dev/null && return 0
    done
    sleep 0.1
  done
  bad "timed out waiting for a point of $1 to reach step 50"
  return 1
}
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}'; }
# The run log's status (h5dump: far cheaper than starting slowpipe).
status_of() { h5dump -a status "$1" 2>/dev/null | sed -n 's/.*(0): "\(.*\)".*/\1/p'; }
# same_tables A B: the train tables (without the measured wall-clock columns)
# and the eval tables of two run logs are equal, value for value.
same_tables() {
  h5diff -q --exclude-path /step_time_s --exclude-path /wall_time_s --exclude-path /compute_s \
    "$1" "$2" /train /train >/dev/null 2>&1 &&
    h5diff -q "$1" "$2" /eval /eval >/dev/null 2>&1
}

for i in $(seq 1 400); do echo "pipeline stage $i sends compressed activations over a slow link"; done >corpus.txt
cat >grid.ini <<'EOF'
# 2 codecs x 2 networks x 2 seeds of a tiny GPT
[model]
layers = 2
d_model = 32
heads = 2
seq_len = 16
[data]
name = text
path = corpus.txt
limit = 128
[pipeline]
stages = 2
batch_size = 8
microbatches = 2
[run]
steps = 200
checkpoint_every = 5
[eval]
every = 50
batches = 2
[net]
compute = fixed:0.01
[sweep]
compress.fw = none | q2
net.preset = 100Mbps | 1Gbps
run.seed = 1 | 2
EOF
names=$("$bin" sweep grid.ini --dry-run | awk 'NR>1{print $2}')
[ "$(echo "$names" | wc -l)" -eq 8 ] && ok || bad "dry run should list 8 points: $names"
echo "$names" | grep -qx 'fw=q2_net=1Gbps_seed=2' && ok || bad "point names: $names"
[ "$("$bin" sweep grid.ini --dry-run | grep -cF '[would run]')" -eq 8 ] && ok ||
  bad "a dry run with no folder yet should say 'would run' for all 8 points"
sel=$("$bin" sweep grid.ini --dry-run --only fw=q2,seed=2)
[ "$(echo "$sel" | awk 'NR>1{print $1 " " $2}' | tr '\n' ' ')" = "6 fw=q2_net=100Mbps_seed=2 8 fw=q2_net=1Gbps_seed=2 " ] &&
  ok || bad "--dry-run --only fw=q2,seed=2 should list points 6 and 8: $sel"

# Bad sweep files: exit 2, naming the line and the problem; nothing is created.
bad_file() {  # PATTERN [sweep]-LINES...
  local pattern="$1"
  shift
  { sed '/^\[sweep\]/,$d' grid.ini; echo "[sweep]"; printf '%s\n' "$@"; } >bad.ini
  expect 2 "$pattern" -- "$bin" sweep bad.ini --out bad
}
bad_file "unknown key 'compress.fx'" "compress.fx = none | q2"
bad_file "separated by '|'" "run.seed = 1, 2"
bad_file "';' in [sweep]" "compress.fw = none; q2"
bad_file "'run.seed' has an empty list" "run.seed ="
bad_file "empty value" "run.seed = 1 | | 2"
bad_file "equally many values" "compress.fw = none | q2 | q4" "run.label = a | b" "zip = compress.fw, run.label"
bad_file "bad spec 'q9'" "run.seed = 1 | 2" "compress.fw = q2 | q9"
bad_file "never takes the value" "run.seed = 1 | 2" "exclude = run.seed=3"
expect 2 "the sweep varies this key" -- "$bin" sweep grid.ini --set run.seed=5 --out bad
expect 2 "cannot open sweep file" -- "$bin" sweep missing.ini
# Selectors that pick nothing: exit 2, saying what exists.
expect 2 "8  fw=q2_net=1Gbps_seed=2" -- "$bin" sweep grid.ini --point 9 --out bad
expect 2 "no point has that name" -- "$bin" sweep grid.ini --point fw=q4 --out bad
expect 2 "compress.fw takes none | q2" -- "$bin" sweep grid.ini --only fw=q4 --out bad
expect 2 "with KEY a key the sweep lists: compress.fw (fw)" -- "$bin" sweep grid.ini --only bits=2 --out bad
expect 2 "leave -j out" -- "$bin" sweep grid.ini --point 1 -j 2 --out bad
# With --emit-jobs, a selection emits those points alone (and their NAME.ini).
expect 0 "1 jobs" -- "$bin" sweep grid.ini --emit-jobs one.txt --point 2 --out one
[ "$(ls one)" = "fw=none_net=100Mbps_seed=2.ini" ] && grep -qF "seed=2.h5" one.txt && ok ||
  bad "--emit-jobs --point 2 should emit point 2 alone: $(ls one)"
[ ! -e bad ] && ok || bad "a refused sweep created its folder"

# --emit-jobs, then GNU parallel runs the file as it is.
expect 0 "8 jobs" -- "$bin" sweep grid.ini --emit-jobs jobs.txt --out ref
[ "$(wc -l <jobs.txt)" -eq 8 ] && ok || bad "jobs.txt should hold 8 commands"
for n in $names; do
  grep -qx "run.out = $n.h5" "ref/$n.ini" && ok || bad "--emit-jobs: no ref/$n.ini with a relative run.out"
done
if command -v parallel >/dev/null 2>&1; then
  t0=$(date +%s.%N)
  HOME="$work" parallel <jobs.txt
  rc=$?
  echo "parallel ran the 8 jobs in $(elapsed "$t0") s"
  [ "$rc" -eq 0 ] && ok || bad "parallel < jobs.txt exited $rc"
  # A Slurm array task runs one line; a complete point is left alone.
  before=$(md5sum ref/fw=none_net=100Mbps_seed=1.h5)
  sed -n "1p" jobs.txt | bash && ok || bad "line 1 of jobs.txt under bash failed"
  [ "$(md5sum ref/fw=none_net=100Mbps_seed=1.h5)" = "$before" ] && ok || bad "rerunning a job changed its complete log"
else
  echo "test_sweep: GNU parallel is not installed (scripts/install-deps.sh installs it): running jobs.txt with bash" >&2
  bash jobs.txt
fi
for f in ref/*.h5; do [ "$(status_of "$f")" = complete ] && ok || bad "$f is not complete"; done
[ "$(ls ref/*.h5 | wc -l)" -eq 8 ] && ok || bad "emit-jobs: expected 8 run logs in ref/"
expect 0 "0 to run (0 to resume), 8 already done" -- "$bin" sweep grid.ini --out ref

# A copy of the folder reruns a point by hand from its NAME.ini, into the copy.
p=fw=q2_net=1Gbps_seed=1
cp -r ref copy && rm -rf "copy/$p.h5" "copy/$p.h5.ckpt"
before=$(md5sum "ref/$p.h5")
(cd copy && "$bin" train --config "$p.ini" --set run.overwrite=true >rerun.txt 2>&1) && ok ||
  bad "train --config copy/$p.ini failed: $(tail -2 copy/rerun.txt)"
[ "$(md5sum "ref/$p.h5")" = "$before" ] && ok || bad "rerunning a point of the copy changed the original's log"
[ "$(status_of "copy/$p.h5")" = complete ] && ok || bad "the copy's rerun wrote no complete copy/$p.h5"
same_tables "copy/$p.h5" "ref/$p.h5" && ok || bad "the copy's rerun differs from the original run"

# One point in the foreground (--only): its output on the terminal and in its
# .log; SIGTERM stops it (exit 130); --point resumes it into the same files.
p=fw=none_net=100Mbps_seed=1
"$bin" sweep grid.ini --out fg --only fw=none,net=100Mbps,seed=1 >fg1.txt 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  awk '/^eval @ step [0-9]+:/{if ($4+0 >= 50) f=1} END{exit !f}' "fg/$p.log" 2>/dev/null && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] && ok || bad "a foreground point stopped by SIGTERM: exit $rc, expected 130: $(tail -3 fg1.txt)"
grep -q "^eval @ step 50:" fg1.txt && ok || bad "the foreground point's output is not on the terminal"
grep -q "^stopped $p" fg1.txt && ok || bad "no 'stopped' line: $(tail -3 fg1.txt)"
expect 0 "[would resume from step" -- "$bin" sweep grid.ini --out fg --dry-run --point 1
expect 0 "interrupted: resuming" -- "$bin" sweep grid.ini --out fg --point 1
[ "$(status_of "fg/$p.h5")" = complete ] && ok || bad "fg/$p.h5 is not complete"
same_tables "fg/$p.h5" "ref/$p.h5" && ok || bad "the foreground point differs from its sweep run"
grep -q "^eval @ step 200:" "fg/$p.log" && [ "$(grep -c '^# slowpipe sweep' "fg/$p.log")" -eq 2 ] && ok ||
  bad "fg/$p.log should hold both attempts' output: $(grep '^#' "fg/$p.log")"
[ "$(ls fg/*.h5 | wc -l)" -eq 1 ] && ok || bad "--point ran other points: $(ls fg)"
fgdry=$("$bin" sweep grid.ini --out fg --dry-run)
[ "$(echo "$fgdry" | grep -cF '[done]')" -eq 1 ] && [ "$(echo "$fgdry" | grep -cF '[would run]')" -eq 7 ] &&
  ok || bad "after --point 1 the sweep should see 1 point done, 7 to run: $fgdry"
expect 0 "nothing to run" -- "$bin" sweep grid.ini --out fg --point "$p"

# The same grid, two at a time: SIGTERM midway.
t0=$(date +%s.%N)
"$bin" sweep grid.ini -j 2 --out a >run1.txt 2>&1 &
pid=$!
wait_mid_run run1.txt a
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] && ok || bad "a sweep stopped by SIGTERM exited $rc, expected 130"
grep -q "stopping: signal received" run1.txt && ok || bad "no 'stopping' line: $(tail -3 run1.txt)"
[ -z "$(sed -n '/stopping: signal received/,$p' run1.txt | grep '\] start ')" ] && ok ||
  bad "points started after the signal"
grep -q " 2 running," run1.txt && ok || bad "-j 2 never ran two points at once"
! grep -q " [3-9] running," run1.txt && ok || bad "-j 2 ran more than two points at once"

# check_rerun OUT: the rerun in OUT skipped exactly the points complete before
# it (logs untouched) and started the others, resuming the interrupted ones.
snapshot() {  # the status of every point's log (or 'none'), and md5s of the complete ones
  for n in $names; do
    s=$(status_of "a/$n.h5")
    echo "$n ${s:-none}"
  done >status.txt
  for n in $(awk '$2=="complete"{print $1}' status.txt); do md5sum "a/$n.h5"; done >complete.md5
}
check_rerun() {
  local out="$1"
  local complete interrupted
  complete=$(awk '$2=="complete"{print $1}' status.txt | sort)
  interrupted=$(awk '$2=="interrupted"||$2=="running"{print $1}' status.txt | sort)
  [ "$(grep '^  skip ' "$out" | awk '{print $2}' | sort)" = "$complete" ] && ok ||
    bad "the rerun should skip exactly the complete points ($complete): $(grep skip "$out")"
  [ "$(sed -n 's/.*\] start  \([^ ]*\) (.*resuming)$/\1/p' "$out" | sort)" = "$interrupted" ] && ok ||
    bad "the rerun should resume exactly the interrupted points ($interrupted): $(grep resuming "$out")"
  [ -z "$complete" ] || { md5sum -c --quiet complete.md5 && ok || bad "a complete log was rewritten"; }
}
snapshot
grep -q interrupted status.txt && ok || bad "no point was interrupted by the SIGTERM: $(cat status.txt)"

# Rerun, then SIGKILL midway: the runs stop with it (they hold the folder's
# lock until they exit, so the lock coming free means they are gone).
"$bin" sweep grid.ini -j 2 --out a >run2.txt 2>&1 &
pid=$!
wait_mid_run run2.txt a
kill -KILL "$pid"
wait "$pid" 2>/dev/null
check_rerun run2.txt
if flock -w 30 a/.sweep.lock true; then ok; else bad "runs of a SIGKILLed sweep still hold its lock after 30 s"; fi
snapshot

# Rerun to the end.
"$bin" sweep grid.ini -j 2 --out a >run3.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok || bad "the final rerun exited $rc: $(tail -5 run3.txt)"
check_rerun run3.txt
echo "sweep of 8 points, stopped twice and resumed: $(elapsed "$t0") s"
for n in $names; do
  [ "$(status_of "a/$n.h5")" = complete ] && ok || bad "a/$n.h5 is not complete"
  if same_tables "a/$n.h5" "ref/$n.h5"; then ok; else bad "$n differs from its uninterrupted run"; fi
  [ -s "a/$n.ini" ] && ok || bad "no a/$n.ini"
done
# Control: the comparison does tell two different runs apart.
! same_tables "a/fw=q2_net=1Gbps_seed=1.h5" "ref/fw=q2_net=1Gbps_seed=2.h5" && ok ||
  bad "same_tables finds two seeds equal"
resumed=0
for n in $names; do
  h5dump -a resumed_at_steps "a/$n.h5" 2>/dev/null | grep -q '(0): "[1-9]' && resumed=$((resumed + 1))
done
[ "$resumed" -gt 0 ] && ok || bad "no point was resumed from a checkpoint"
echo "points resumed from a checkpoint: $resumed"

finish test_sweep
