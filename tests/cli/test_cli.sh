#!/usr/bin/env bash
# End-to-end checks of the `slowpipe` command line: exit codes and messages for
# bad input, the run log of real short runs (bytes on the wire, determinism, a
# run killed with SIGKILL), export, codec inspection, timing and netsim; both
# Muon variants train.
#   tests/cli/test_cli.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin="$1"
src="$2"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# column FILE NAME: the values of a TSV column (by header name)
column() {
  awk -F'\t' -v c="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==c) k=i; next} {print $k}' "$1"
}

# A small text corpus for quick runs.
for i in $(seq 1 400); do echo "pipeline stage $i sends compressed activations over a slow link"; done > corpus.txt
small=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
       --set data.name=text --set data.path=corpus.txt --set pipeline.batch_size=8
       --set eval.batches=2 --set run.progress=none)

# Usage errors: exit 2 with a message that names the problem.
expect 0 "commands:" -- "$bin" --help
expect 2 "unknown command" -- "$bin" bogus
expect 0 "pipeline.microbatches" -- "$bin" train --help
expect 2 "unknown key 'run.stesp'" -- "$bin" train --set run.stesp=3
expect 2 "not an integer" -- "$bin" train --set run.steps=ten
expect 2 "position" -- "$bin" train --fw 'topk:1.5'
expect 2 "expected one of" -- "$bin" train --set pipeline.schedule=zigzag
expect 2 "does not split" -- "$bin" train "${small[@]}" --set pipeline.microbatches=3 --out a.h5
expect 2 "nope.txt" -- "$bin" train --set data.name=text --set data.path=nope.txt --out a.h5
expect 2 "/no/such/gcide.dict.dz" -- "$bin" train --set data.path=/no/such/gcide.dict.dz --out a.h5
expect 2 "cannot open config" -- "$bin" train --config missing.ini
expect 2 "stages" -- "$bin" train "${small[@]}" --stages 9 --out a.h5

# A real short run, then the overwrite guard keeps it intact.
expect 0 "final loss" -- "$bin" train "${small[@]}" --steps 12 --out run1.h5
expect 2 "exists" -- "$bin" train "${small[@]}" --steps 3 --out run1.h5
"$bin" export run1.h5 --table train > run1.tsv
[ "$(($(wc -l < run1.tsv) - 1))" -eq 12 ] && ok || bad "run1 should have 12 train rows"
expect 0 "" -- "$bin" export run1.h5 --table eval
expect 2 "train" -- "$bin" export run1.h5 --table nope
expect 2 "" -- "$bin" export missing.h5
expect 0 "config.run.steps" -- "$bin" export run1.h5 --attrs
for c in step loss sim_time_s fw0_bytes bw0_bytes lr grad_norm; do
  head -1 run1.tsv | tr '\t' '\n' | grep -qx "$c" && ok || bad "train table lacks column $c"
done

# Muon, both variants (docs/optimizers.md), trains the GPT: the evaluation
# loss after 30 steps is below the one at step 0.
for variant in benchmark canonical; do
  "$bin" train "${small[@]}" --steps 30 --set eval.every=0 --set optim.name=muon \
    --set optim.lr=0.02 --set optim.muon_variant=$variant --out muon-$variant.h5 >/dev/null 2>&1 ||
    bad "muon ($variant) run failed"
  "$bin" export muon-$variant.h5 --table eval >muon-$variant.tsv
  column muon-$variant.tsv loss | awk 'NR == 1 { first = $1 } END { exit !(NR >= 2 && $1 < first - 0.5) }' &&
    ok || bad "muon ($variant): the eval loss did not fall: $(column muon-$variant.tsv loss | tr '\n' ' ')"
done

# Same seed, same losses, bit for bit (exported with full precision).
"$bin" train "${small[@]}" --steps 12 --out run2.h5 >/dev/null 2>&1
"$bin" export run2.h5 --table train > run2.tsv
[ "$(column run1.tsv loss)" = "$(column run2.tsv loss)" ] && ok || bad "same seed gave different losses"

# Forward bytes: q2 is ~16x smaller than fp32 (less the per-channel fp16 scales);
# AQ-SGD after warm-up sends the same 2-bit messages. Demo workload, few steps.
demo=(--config "$src/experiments/presets/demo-finetune.ini" --set model.init_from=
      --set run.steps=4 --set eval.every=0 --set eval.batches=1 --set run.progress=none
      --set compress.aq_warmup_epochs=0)
"$bin" train "${demo[@]}" --fw none --bw none --out fp32.h5 >/dev/null 2>&1 || bad "fp32 demo run failed"
"$bin" train "${demo[@]}" --fw q2 --bw q4 --out q2.h5 >/dev/null 2>&1 || bad "q2 demo run failed"
"$bin" train "${demo[@]}" --fw 'aq(q2)' --bw q4 --out aq.h5 >/dev/null 2>&1 || bad "aq demo run failed"
for r in fp32 q2 aq; do "$bin" export $r.h5 --table train > $r.tsv; done
for r in q2 aq; do
  ratio=$(paste <(column fp32.tsv fw0_bytes) <(column $r.tsv fw0_bytes) | awk '{a+=$1; b+=$2} END{printf "%.3f", a/b}')
  awk -v x="$ratio" 'BEGIN{exit !(x > 14.5 && x <= 16.0)}' && ok || bad "$r forward bytes ratio $ratio not ~16"
  loss=$(column $r.tsv loss | tail -1)
  awk -v x="$loss" 'BEGIN{exit !(x == x && x < 100)}' && ok || bad "$r final loss $loss not finite"
done

# A run killed with SIGKILL leaves a readable log with its flushed rows.
"$bin" train "${small[@]}" --steps 100000 --set run.flush_every=1 --out killed.h5 >/dev/null 2>&1 &
pid=$!
rows=0
for _ in $(seq 1 300); do
  sleep 0.1
  rows=$("$bin" export killed.h5 --table train 2>/dev/null | tail -n +2 | wc -l)
  [ "$rows" -ge 5 ] && break
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
after=$("$bin" export killed.h5 --table train 2>/dev/null | tail -n +2 | wc -l)
[ "$rows" -ge 5 ] && [ "$after" -ge "$rows" ] && ok || bad "killed run: $rows rows before, $after after"

# attr FILE KEY: a root attribute of a run log
attr() { "$bin" export "$1" --attrs 2>/dev/null | awk -F'\t' -v k="$2" '$1==k{print $2}'; }

# Shortcut flags and --set apply in the order written: the last one of a key
# wins (docs/command-line.md, "Order"), for train and timing.
expect 0 "final loss" -- "$bin" train "${small[@]}" --steps 2 --net 100Mbps --set net.preset=geo-us-asia \
  --seed 3 --set run.seed=4 --out order1.h5
[ "$(attr order1.h5 config.net.preset)" = geo-us-asia ] && ok || bad "--net then --set net.preset: the --set should win"
[ "$(attr order1.h5 config.run.seed)" = 4 ] && ok || bad "--seed then --set run.seed: the --set should win"
expect 0 "final loss" -- "$bin" train "${small[@]}" --steps 2 --set net.preset=geo-us-asia --net 100Mbps \
  --out order2.h5
[ "$(attr order2.h5 config.net.preset)" = 100Mbps ] && ok || bad "--set net.preset then --net: --net should win"
expect 0 "network preset geo-us-asia" -- "$bin" timing --net 100Mbps --set net.preset=geo-us-asia
expect 0 "network preset 100Mbps" -- "$bin" timing --set net.preset=geo-us-asia --net 100Mbps

# Provenance: the build (type, compiler, commit and dirty flag, as
# `slowpipe --version` prints them) and the CPU are in every log.
"$bin" train "${small[@]}" --steps 1 --set eval.at_start=false --out prov.h5 >/dev/null 2>&1
version=$("$bin" --version)
commit=$(attr prov.h5 slowpipe.git_commit)
dirty=$(attr prov.h5 slowpipe.git_dirty)
case "$dirty" in true | false | unknown) ok ;; *) bad "slowpipe.git_dirty is '$dirty'" ;; esac
suffix=""
[ "$dirty" = true ] && suffix="-dirty"
grep -qF "($commit$suffix, $(attr prov.h5 slowpipe.build_type), $(attr prov.h5 slowpipe.compiler))" \
  <<<"$version" && ok || bad "log provenance differs from --version: $version"
[ -n "$(attr prov.h5 slowpipe.build_type)" ] && [ -n "$(attr prov.h5 slowpipe.compiler)" ] &&
  [ -n "$(attr prov.h5 host.cpu)" ] && ok || bad "build type, compiler or CPU missing from the log"
[ "$(attr prov.h5 compute.dtype)" = fp32 ] && ok || bad "compute.dtype of an fp32 run"

# run.dtype = bf16: the log says so, and what this device computes in.
"$bin" train "${small[@]}" --steps 2 --set eval.at_start=false --set run.dtype=bf16 --set run.progress=plain \
  --out bf16.h5 >bf16.out 2>&1 || bad "a bf16 run failed: $(tail -3 bf16.out)"
[ "$(attr bf16.h5 compute.dtype)" = bf16 ] && ok || bad "compute.dtype of a bf16 run"
attr bf16.h5 compute.dtype_note | grep -q "bf16 autocast" && ok || bad "compute.dtype_note of a bf16 run"
grep -q "run.dtype bf16 autocast" bf16.out && ok || bad "a bf16 run does not say what it computes in"

# data.name = tokens (docs/models.md, "Token shards"): the first 2,000 bytes
# of the corpus as uint16 token ids in two shards written here train a tiny
# GPT; cut into the same windows as the text data set, they give its losses
# bit for bit.
head -c 2000 corpus.txt >corpus2k.txt
od -An -v -tu1 corpus2k.txt | tr -s ' ' '\n' | grep . >ids.txt
mkdir -p tok
head -n 1100 ids.txt | bash "$src/tests/cli/write_shard.sh" tok/part_000.bin
tail -n +1101 ids.txt | bash "$src/tests/cli/write_shard.sh" tok/part_001.bin
tiny=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
      --set pipeline.batch_size=8 --set eval.batches=2 --set eval.every=2 --set run.progress=none)
expect 0 "final loss" -- "$bin" train "${tiny[@]}" --set data.name=tokens --set 'data.path=tok/*.bin' \
  --steps 4 --out tokens.h5
expect 0 "final loss" -- "$bin" train "${tiny[@]}" --set data.name=text --set data.path=corpus2k.txt \
  --steps 4 --out bytes.h5
[ "$(attr tokens.h5 config.data.name)" = tokens ] && ok || bad "tokens.h5 does not log data.name = tokens"
for t in train eval; do
  "$bin" export tokens.h5 --table $t >tokens_$t.tsv
  "$bin" export bytes.h5 --table $t >bytes_$t.tsv
  [ "$(column tokens_$t.tsv loss)" = "$(column bytes_$t.tsv loss)" ] && [ -n "$(column tokens_$t.tsv loss)" ] &&
    ok || bad "token shards of the corpus's bytes: $t losses differ from the text data set's"
done

# Mistakes found before anything is loaded leave no log behind, and the
# corrected rerun with the same --out runs.
expect 2 "cannot carry data-parallel gradients" -- "$bin" train "${small[@]}" --set pipeline.replicas=2 \
  --set pipeline.stages=2 --grad 'aq(q2)' --out early.h5
expect 2 "topk:shared" -- "$bin" train "${small[@]}" --set pipeline.stages=2 --fw q4 --bw topk:shared --out early.h5
expect 2 "boundary 5" -- "$bin" train "${small[@]}" --set pipeline.stages=2 --set compress.fw_at=5:q4 --out early.h5
expect 2 "run.device" -- "$bin" train "${small[@]}" --set run.device=cudagarbage --out early.h5
expect 2 "is a folder" -- "$bin" train "${small[@]}" --out .
[ ! -e early.h5 ] && ok || bad "a usage error left a run log behind"

# A failure after the log exists: status failed, the error kept, rows kept;
# the same --out is then refused (rows would be lost) unless resumed.
SLOWPIPE_FAULT=error-step:3 "$bin" train "${small[@]}" --set pipeline.stages=2 --steps 6 \
  --set run.flush_every=1 --out failed.h5 >/dev/null 2>&1
[ $? -eq 1 ] && ok || bad "an injected failure should exit 1"
[ "$(attr failed.h5 status)" = "failed" ] && ok || bad "failed run not marked failed"
attr failed.h5 error | grep -q "injected failure" && ok || bad "failed run lacks its error"
[ "$("$bin" export failed.h5 --table train | tail -n +2 | wc -l)" -eq 3 ] && ok || bad "failed run lost rows"
expect 2 "resume" -- "$bin" train "${small[@]}" --set pipeline.stages=2 --steps 6 --out failed.h5
expect 0 "6 steps" -- "$bin" train --resume failed.h5
[ "$(attr failed.h5 status)" = "complete" ] && ok || bad "resumed failed run not complete"

# Divergence: a clean stop with exit 4, status diverged, the place named.
expect 4 "non-finite" -- "$bin" train "${small[@]}" --set pipeline.stages=2 --steps 30 --set optim.name=sgd \
  --set optim.lr=100 --set optim.clip=0 --set optim.momentum=0.99 --out div.h5
[ "$(attr div.h5 status)" = "diverged" ] && ok || bad "diverged run not marked diverged"
attr div.h5 error | grep -q "step" && ok || bad "diverged run's error does not name the step"
[ "$("$bin" export div.h5 --table train | tail -n +2 | wc -l)" -ge 1 ] && ok || bad "diverged run lost its rows"

# Resume refuses a changed configuration and names the key.
expect 2 "optim.lr" -- "$bin" train --resume div.h5 --set optim.lr=0.1
expect 2 "nothing.h5" -- "$bin" train --resume nothing.h5

# --resume continues its log in place: --out naming another file is refused
# and makes nothing; naming the same file another way is accepted.
expect 2 "in place" -- "$bin" train --resume run1.h5 --out other.h5
[ ! -e other.h5 ] && ok || bad "a refused --resume --out made its file"
expect 0 "already complete" -- "$bin" train --resume run1.h5 --out "$PWD/run1.h5"

# A divergence the evaluation finds first: status diverged, the step named.
expect 4 "non-finite validation loss at step" -- "$bin" train "${small[@]}" --set pipeline.stages=2 \
  --steps 40 --set optim.name=sgd --set optim.lr=100 --set optim.clip=0 --fw topk:0.1 \
  --set eval.every=1 --out evaldiv.h5
[ "$(attr evaldiv.h5 status)" = "diverged" ] && ok || bad "eval divergence not marked diverged"

# No validation split: no eval rows, and the log says why.
expect 0 "no evaluation" -- "$bin" train "${small[@]}" --steps 2 --set data.val_fraction=0 --out noval.h5
[ "$("$bin" export noval.h5 --table eval | tail -n +2 | wc -l)" -eq 0 ] && ok || bad "noval.h5 has eval rows"
attr noval.h5 warnings | grep -q "validation split is empty" && ok || bad "noval.h5 lacks its warning"

# A resume whose checkpoints are gone starts over and says so in the log.
(SLOWPIPE_FAULT=step:2 "$bin" train "${small[@]}" --steps 3 --set run.checkpoint_every=1 \
  --out nockpt.h5; true) >/dev/null 2>&1
rm -rf nockpt.h5.ckpt
expect 0 "starts over from step 0" -- "$bin" train --resume nockpt.h5
attr nockpt.h5 warnings | grep -q "starts over from step 0" && ok || bad "nockpt.h5 lacks its warning"

# An output HDF5 cannot write: a plain message, no HDF5 text.
"$bin" train "${small[@]}" --steps 1 --set run.overwrite=true --out /dev/full >/dev/null 2>full.err
[ $? -eq 2 ] && ! grep -q HDF5 full.err && ok || bad "--out /dev/full: $(cat full.err)"

# Codec inspection, what-if timing, network scenarios.
ratio=$("$bin" codec --spec q4 | awk '$1=="ratio"{print $2}' | tr -d x)
awk -v x="$ratio" 'BEGIN{exit !(x > 7.5 && x <= 8.0)}' && ok || bad "codec q4 ratio $ratio not ~8"
expect 0 "aq" -- "$bin" codecs
expect 2 "position" -- "$bin" codec --spec 'ef(q4'
expect 0 "x q4's   (fastest of 2 interleaved runs each)" -- "$bin" codec --spec q8 --against q4 --repeat 2
expect 2 "--repeat: expected a count" -- "$bin" codec --spec q8 --repeat 0
expect 2 "position" -- "$bin" codec --spec q8 --against 'ef(q4'
expect 0 "100Mbps" -- "$bin" timing --fw q4 --bw q8
expect 2 "" -- "$bin" timing --fw q99
expect 0 "" -- "$bin" netsim "$src/experiments/netsim/three_flows.json"
expect 2 "" -- "$bin" netsim missing.json

finish cli
