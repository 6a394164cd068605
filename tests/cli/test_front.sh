#!/usr/bin/env bash
# The light front (docs/cli-startup.md): `slowpipe` links and loads no libtorch,
# runs the light commands itself and hands the others to slowpipe-torch, beside
# it, with execv: the same process (pid, arguments, signals, stdout) and the same
# exit codes; a clear error when slowpipe-torch is missing; both binaries agree
# on --version and --help. Start-up time is measured by bench/cli/startup.sh, not here.
#   tests/cli/test_front.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin="$1"
src="$2"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
torch_bin="$(dirname "$bin")/slowpipe-torch"
[ -x "$torch_bin" ] && ok || bad "$torch_bin is not built beside $bin"

# torch_libs: the torch-side shared libraries named in stdin (ldd or LD_DEBUG output).
torch_libs() { grep -E 'lib(torch|c10|gomp|openblas|blas|lapack)[^/ ]*\.so' | sort -u; }

# Linked: nothing of libtorch, OpenMP or BLAS in the front; all of it in the full binary.
[ -z "$(ldd "$bin" | torch_libs)" ] && ok || bad "the front links torch-side libraries: $(ldd "$bin" | torch_libs | tr '\n' ' ')"
ldd "$torch_bin" | torch_libs | grep libtorch >/dev/null && ok || bad "slowpipe-torch does not link libtorch (check the check)"

# Loaded at run time (dlopen included): glibc's loader lists every file it maps.
for i in $(seq 1 400); do echo "pipeline stage $i sends compressed activations over a slow link"; done >corpus.txt
small=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
       --set data.name=text --set data.path=corpus.txt --set pipeline.batch_size=8
       --set eval.batches=2 --set run.progress=none)
"$bin" train "${small[@]}" --steps 4 --out run.h5 >/dev/null 2>&1 || bad "a short train through the front failed"
light=("--version" "codecs" "timing --fw q4 --bw topk:0.1 --bandwidth 1Gbps"
       "netsim $src/experiments/netsim/three_flows.json" "export run.h5 --table train"
       "clock $src/experiments/clock/published.csv"
       "summary run.h5" "--help" "launch --help")
for cmd in "${light[@]}"; do
  read -r -a args <<<"$cmd"
  loaded=$(LD_DEBUG=files "$bin" "${args[@]}" 2>&1 >/dev/null | grep -oE 'file=[^ ]+' | torch_libs)
  [ -z "$loaded" ] && ok || bad "slowpipe $cmd loaded $(echo "$loaded" | head -1)"
done
loaded=$(LD_DEBUG=files "$torch_bin" --version 2>&1 >/dev/null | grep -oE 'file=[^ ]+' | torch_libs)
grep -q libtorch <<<"$loaded" && ok || bad "LD_DEBUG shows no libtorch for slowpipe-torch (check the check)"

# The same output from both binaries: the light commands run the same code.
for cmd in "--version" "--help" "codecs" "timing --preset aqsgd-gpt2xl --fw aq(q4) --bw q8 --tsv" \
  "netsim $src/experiments/netsim/geo_ring.json" "export run.h5 --table eval"; do
  read -r -a args <<<"$cmd"
  [ "$("$bin" "${args[@]}" 2>&1)" = "$("$torch_bin" "${args[@]}" 2>&1)" ] && ok ||
    bad "slowpipe and slowpipe-torch differ on '$cmd'"
done

# A train that its torch-free checks refuse (docs/cli-startup.md, "Checks
# before the hand-off") is refused by the front itself, before any torch-side
# library loads, with slowpipe-torch's message and exit code; one that passes
# them is handed over (libtorch loads: the check can fire).
for cmd in "--set run.stesp=3" "--bogus-flag" "--set pipeline.microbatches=3" \
  "--out /proc/x.h5" "--set net.bandwidth=10Gbsp" "--fw topk:shared"; do
  read -r -a args <<<"$cmd"
  front=$("$bin" train "${small[@]}" "${args[@]}" 2>&1)
  front_rc=$?
  full=$("$torch_bin" train "${small[@]}" "${args[@]}" 2>&1)
  full_rc=$?
  [ "$front_rc" -eq 2 ] && [ "$front_rc" -eq "$full_rc" ] && [ "$front" = "$full" ] && ok ||
    bad "train $cmd: the front gave exit $front_rc '$front', slowpipe-torch exit $full_rc '$full'"
  loaded=$(LD_DEBUG=files "$bin" train "${small[@]}" "${args[@]}" 2>&1 >/dev/null |
    grep -oE 'file=[^ ]+' | torch_libs)
  [ -z "$loaded" ] && ok || bad "slowpipe train $cmd loaded $(echo "$loaded" | head -1) before refusing"
done
# `codec` the same: its options, shape, distribution, repeat count and specs
# are checked by the front (cli/codec_args.h) with slowpipe-torch's message
# and exit code, before any torch-side library loads.
for cmd in "--spec zz9" "--spec q4 --shape 0,4" "--spec q4 --dist uniform" "--spec q4 --repeat 0" \
  "--spec q4 --against q4:row:tensor" "--bogus" "--shape 4"; do
  read -r -a args <<<"$cmd"
  front=$("$bin" codec "${args[@]}" 2>&1)
  front_rc=$?
  full=$("$torch_bin" codec "${args[@]}" 2>&1)
  full_rc=$?
  [ "$front_rc" -eq 2 ] && [ "$front_rc" -eq "$full_rc" ] && [ "$front" = "$full" ] && ok ||
    bad "codec $cmd: the front gave exit $front_rc '$front', slowpipe-torch exit $full_rc '$full'"
  loaded=$(LD_DEBUG=files "$bin" codec "${args[@]}" 2>&1 >/dev/null | grep -oE 'file=[^ ]+' | torch_libs)
  [ -z "$loaded" ] && ok || bad "slowpipe codec $cmd loaded $(echo "$loaded" | head -1) before refusing"
done
loaded=$(LD_DEBUG=files "$bin" train "${small[@]}" --set run.steps=0 --out zero.h5 2>&1 >/dev/null |
  grep -oE 'file=[^ ]+' | torch_libs)
grep -q libtorch <<<"$loaded" && ok || bad "a valid train through the front loaded no libtorch (check the check)"

# Every command through the front, with the exit codes of the full binary:
# 0, 2 usage, 3 data, 4 diverged, 1 failure (the codes of main.cpp).
expect 0 "final loss" -- "$bin" train "${small[@]}" --steps 3 --out t0.h5
expect 2 "unknown key 'run.stesp'" -- "$bin" train --set run.stesp=3
echo "not a checkpoint" >notzip.pt
expect 3 "notzip.pt" -- "$bin" train "${small[@]}" --steps 1 --set model.init_from=notzip.pt --out t3.h5
expect 4 "non-finite" -- "$bin" train "${small[@]}" --set pipeline.stages=2 --steps 30 --set optim.name=sgd \
  --set optim.lr=100 --set optim.clip=0 --set optim.momentum=0.99 --out t4.h5
SLOWPIPE_FAULT=error-step:2 "$bin" train "${small[@]}" --steps 4 --out t1.h5 >/dev/null 2>&1
[ $? -eq 1 ] && ok || bad "an injected failure through the front should exit 1"
expect 0 "pipeline.microbatches" -- "$bin" train --help
expect 0 "ratio" -- "$bin" codec --spec q4
expect 2 "position" -- "$bin" codec --spec 'ef(q4'
expect 2 "--nproc" -- "$bin" launch
expect 2 "name the sweep file" -- "$bin" sweep
expect 2 "name the sweep file" -- "$bin" verdict
expect 0 "aq" -- "$bin" codecs
expect 2 "takes no arguments" -- "$bin" codecs extra
expect 0 "100Mbps" -- "$bin" timing --fw q4 --bw q8
expect 2 "does not sparsify" -- "$bin" timing --fw q4 --bw topk:shared
expect 2 "q99" -- "$bin" timing --fw q99
expect 0 "" -- "$bin" netsim "$src/experiments/netsim/three_flows.json"
expect 2 "" -- "$bin" netsim missing.json
expect 0 "loss" -- "$bin" export run.h5 --table train
expect 2 "" -- "$bin" export missing.h5
printf 'garbage' >trash.h5
expect 2 "trash.h5" -- "$bin" export trash.h5
expect 0 "run" -- "$bin" summary run.h5
expect 2 "unknown command" -- "$bin" bogus

# The same process: the pid the caller holds is the training run's (its
# executable becomes slowpipe-torch, its arguments stay those given to the
# front), and signals sent to it reach the run: SIGTERM stops it cleanly (130,
# status interrupted), SIGKILL kills it (137) and leaves no process behind.
wait_for_torch() {  # wait_for_torch PID: until PID runs slowpipe-torch (5 s at most)
  for _ in $(seq 1 50); do
    [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(realpath "$torch_bin")" ] && return 0
    sleep 0.1
  done
  return 1
}
"$bin" train "${small[@]}" --steps 100000 --set run.flush_every=1 --out term.h5 >term.log 2>&1 &
pid=$!
wait_for_torch $pid && ok || bad "pid $pid did not become slowpipe-torch"
[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "$bin train ${small[*]} --steps 100000 --set run.flush_every=1 --out term.h5 " ] &&
  ok || bad "the run's arguments changed: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
for _ in $(seq 1 100); do  # a step or two logged, so the run is past its start-up
  [ "$("$bin" export term.h5 --table train 2>/dev/null | wc -l)" -ge 3 ] && break
  sleep 0.1
done
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && ok || bad "SIGTERM to the front's pid: exit $rc, expected 130 ($(tail -1 term.log))"
"$bin" export term.h5 --attrs | grep -qx $'status\tinterrupted' && ok || bad "the SIGTERMed run is not marked interrupted"

"$bin" train "${small[@]}" --steps 100000 --out kill.h5 >/dev/null 2>&1 &
pid=$!
wait_for_torch $pid && ok || bad "pid $pid did not become slowpipe-torch"
kill -KILL $pid
wait $pid
rc=$?
[ $rc -eq 137 ] && ok || bad "SIGKILL to the front's pid: exit $rc, expected 137"
! pgrep -f "out kill.h5" >/dev/null && ok || bad "a process of the killed run is left: $(pgrep -af 'out kill.h5')"

# Without slowpipe-torch: light commands still run, the others fail clearly (exit 1).
mkdir alone
cp "$bin" alone/slowpipe
expect 0 "aq" -- alone/slowpipe codecs
expect 1 "cannot run 'train': $work/alone/slowpipe-torch not found" -- alone/slowpipe train --steps 1
expect 1 "slowpipe-torch not found" -- alone/slowpipe codec --spec q4
printf '#!/bin/sh\n' >alone/slowpipe-torch  # present but not executable
expect 1 "cannot execute $work/alone/slowpipe-torch: Permission denied" -- alone/slowpipe launch --nproc 2

finish front
