#!/usr/bin/env bash
# End-to-end checks of `slowpipe summary` and `slowpipe plot` on tiny real runs:
# the three formats, values checked with awk against `slowpipe export`, seed
# groups, a diverged run, --rank and the Pareto fronts, the PNGs (signature, size) and bad inputs (exit 2/3,
# gnuplot missing: 1). Definitions: docs/summary.md.
#   tests/cli/test_summary.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: the test works in a temporary folder
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
check() { if eval "$2"; then ok; else bad "$1"; fi; }
# field FILE ROW NAME: a TSV cell by row number (1 = first data row) and header name
field() {
  awk -F'\t' -v r="$2" -v c="$3" 'NR==1{for(i=1;i<=NF;i++) if($i==c) k=i; next}
    NR==r+1{print (k ? $k : "NO_COLUMN")}' "$1"
}
# close A B: relative difference below 1e-6
close() { awk -v a="$1" -v b="$2" 'BEGIN{d=a-b; if(d<0)d=-d; s=(b<0?-b:b); exit !(d<=1e-6*(s>1?s:1))}'; }

for i in $(seq 1 300); do echo "pipeline stage $i sends compressed activations over a slow link"; done > corpus.txt
small=(--set model.layers=2 --set model.d_model=32 --set model.heads=2 --set model.seq_len=16
       --set data.name=text --set data.path=corpus.txt --set pipeline.batch_size=8
       --set eval.batches=2 --set eval.every=10 --set run.progress=none --stages 2 --steps 20
       --set net.compute=fixed:0.001 --set optim.lr=0.003 --bw none)
# 2 codecs x 2 networks x 2 seeds.
for fw in none q4; do for net in 100Mbps 1Gbps; do for seed in 1 2; do
  "$bin" train "${small[@]}" --fw "$fw" --net "$net" --seed "$seed" \
    --out "runs/${fw}_${net}_${seed}.h5" >/dev/null 2>&1 || bad "train $fw $net $seed"
done; done; done

# One row per run: values against the run's own export.
"$bin" summary runs --tsv --no-group --target 4.5 > rows.tsv || bad "summary --tsv --no-group"
check "8 rows" '[ "$(wc -l < rows.tsv)" -eq 9 ]'
check "key columns" '[ "$(head -1 rows.tsv | cut -f1-4)" = "$(printf "compress.fw\tnet.preset\trun.seed\trun")" ]'
# One run of each seed group (each export costs a second of start-up).
for r in 1 4 5 8; do
  log=$(field rows.tsv "$r" run)
  "$bin" export "$log" > train.tsv
  "$bin" export "$log" --table eval > eval.tsv
  # final train loss: mean of the last 10% of 20 steps = the last 2
  want=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) if($i=="loss") k=i; next} {l[NR]=$k} END{printf "%.12g\n", (l[NR]+l[NR-1])/2}' train.tsv)
  check "$log train_loss" 'close "$(field rows.tsv "$r" train_loss)" "$want"'
  want=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) if($i=="sim_time_s") k=i; next} {t=$k} END{print t}' train.tsv)
  check "$log sim_time_s" 'close "$(field rows.tsv "$r" sim_time_s)" "$want"'
  want=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) if($i=="fw0_bytes") k=i; next} {s+=$k; n++} END{printf "%.12g\n", s/n}' train.tsv)
  check "$log fw_bytes" 'close "$(field rows.tsv "$r" fw_bytes)" "$want"'
  want=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) if($i=="bits_per_byte") k=i; next} {v=$k} END{print v}' eval.tsv)
  check "$log bits_per_byte" 'close "$(field rows.tsv "$r" bits_per_byte)" "$want"'
  want=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) if($i=="loss") k=i; next} NR==2||$k<m{m=$k} END{print m}' eval.tsv)
  check "$log eval_loss_best" 'close "$(field rows.tsv "$r" eval_loss_best)" "$want"'
done
# fp32 control: with every channel uncompressed the ratio is exactly 1.
check "fp32 ratio 1" '[ "$(field rows.tsv 1 fp32_ratio)" = 1 ] && [ "$(field rows.tsv 1 compress.fw)" = none ]'
check "q4 ratio > 1.5" 'awk -v x="$(field rows.tsv 5 fp32_ratio)" "BEGIN{exit !(x > 1.5)}"'

# The fp32 shapes of the other models: a CNN cut across its down-sampling block,
# an MLP with 2 replicas (gradients counted too); uncompressed, both give 1.
tiny=(--set data.name=fashion-mnist --set pipeline.batch_size=4 --steps 2 --set eval.batches=1
      --set run.progress=none)
"$bin" train "${tiny[@]}" --set model.name=cnn --set model.layers=4 --set model.channels=8 \
  --stages 4 --out shapes/cnn.h5 >/dev/null 2>&1 || bad "train cnn"
"$bin" train "${tiny[@]}" --set model.name=mlp --set model.layers=3 --stages 3 \
  --set pipeline.replicas=2 --out shapes/mlp.h5 >/dev/null 2>&1 || bad "train mlp"
"$bin" summary shapes --tsv --no-group > shapes.tsv || bad "summary shapes"
check "cnn fp32 ratio 1" '[ "$(field shapes.tsv 1 fp32_ratio)" = 1 ]'
check "mlp fp32 ratio 1" '[ "$(field shapes.tsv 2 fp32_ratio)" = 1 ] && [ "$(field shapes.tsv 2 grad_bytes)" != nan ]'
check "accuracy column" '[ "$(field shapes.tsv 1 accuracy)" != NO_COLUMN ]'

# Seed groups: 4 rows of n = 2, the mean of the two runs.
"$bin" summary runs --tsv --target 4.5 > groups.tsv
check "4 groups" '[ "$(wc -l < groups.tsv)" -eq 5 ] && [ "$(field groups.tsv 1 n)" = 2 ]'
check "no seed column" '! head -1 groups.tsv | grep -q run.seed'
want=$(awk -v a="$(field rows.tsv 1 train_loss)" -v b="$(field rows.tsv 2 train_loss)" 'BEGIN{printf "%.12g\n", (a+b)/2}')
check "group mean" 'close "$(field groups.tsv 1 train_loss)" "$want"'
want=$(awk -v a="$(field rows.tsv 1 train_loss)" -v b="$(field rows.tsv 2 train_loss)" 'BEGIN{d=a-b; printf "%.12g\n", (d<0?-d:d)/sqrt(2)}')
check "group sample std" 'close "$(field groups.tsv 1 train_loss_std)" "$want"'

"$bin" summary runs --md > summary.md || bad "summary --md"
check "md header" 'head -1 summary.md | grep -qF "| compress.fw | net.preset | n | status | steps |"'
check "md alignment row" 'sed -n 2p summary.md | grep -qF "|---|---|---:|---|---:|"'
check "md rows" '[ "$(grep -c "^| q4 |" summary.md)" -eq 2 ]'
expect 0 "not reached" -- "$bin" summary runs --target 0.01
expect 0 "sample standard deviation" -- "$bin" summary runs

# A diverged run appears with its status beside the others.
"$bin" train "${small[@]}" --set optim.name=sgd --set optim.lr=100 --set optim.clip=0 \
  --out mixed/diverged.h5 >/dev/null 2>&1
cp runs/q4_1Gbps_1.h5 mixed/
expect 0 "diverged" -- "$bin" summary mixed
# --rank: the diverged group ranks after the finite one and is off both fronts.
"$bin" summary mixed --rank train_loss --tsv > ranked.tsv || bad "summary --rank"
check "rank 1 is q4" '[ "$(field ranked.tsv 1 rank)" = 1 ] && [ "$(field ranked.tsv 1 status)" = complete ]'
check "diverged ranks 2, off the fronts" '[ "$(field ranked.tsv 2 rank)" = 2 ] && [ "$(field ranked.tsv 2 front_bytes)" = 0 ] && [ "$(field ranked.tsv 2 front_time)" = 0 ]'
check "q4 on the fronts" '[ "$(field ranked.tsv 1 front_bytes)" = 1 ] && [ "$(field ranked.tsv 1 front_time)" = 1 ]'
# wire_bytes = fw + bw bytes per step; ranked by it, q4 (fewer bytes) first.
"$bin" summary runs --rank wire_bytes --tsv > wire.tsv || bad "summary --rank wire_bytes"
check "q4 first by wire bytes" '[ "$(field wire.tsv 1 compress.fw)" = q4 ] && [ "$(field wire.tsv 4 compress.fw)" = none ]'
check "wire bytes > 0" 'awk -v x="$(field wire.tsv 1 wire_bytes)" "BEGIN{exit !(x > 0)}"'
check "wire = fw + bw" 'close "$(field wire.tsv 1 wire_bytes)" "$(awk -v a="$(field wire.tsv 1 fw_bytes)" -v b="$(field wire.tsv 1 bw_bytes)" "BEGIN{printf \"%.12g\", a+b}")"'
expect 0 "front loss/bytes" -- "$bin" summary runs --rank sim_time_s --wide
expect 0 "front/bytes" -- "$bin" summary runs --rank sim_time_s
# The default text fits 100 columns (the full table does not), --wide has every column.
"$bin" summary runs --target 4.5 > narrow.txt && "$bin" summary runs --target 4.5 --wide > wide.txt
# widest FILE: the longest line in characters (UTF-8 continuation bytes dropped).
widest() { LC_ALL=C sed "s/[$(printf '\200-\277')]//g" "$1" | LC_ALL=C awk '{ n = length($0); if (n > m) m = n } END { print m + 0 }'; }
check "text fits 100 columns" '[ "$(widest narrow.txt)" -le 100 ]'
check "--wide is wider" '[ "$(widest wide.txt)" -gt 100 ]'
check "--wide has every column" 'head -1 wide.txt | grep -q "best bits/byte (c)" && ! head -1 narrow.txt | grep -q "best bits/byte (c)"'
check "left-out columns named" 'grep -q "left out to fit 100 columns" narrow.txt'
expect 2 "exclude each other" -- "$bin" summary runs --md --wide

# Time to target under both rules (docs/summary.md, "Time to target"), against the
# run's own tables: the train rule's step is the first whose mean over the last 10
# losses is <= 4.5; the eval rule's the first evaluation (every 10 steps, and step 0)
# with loss <= 4.5; tokens = samples x seq_len 16, samples = the train table's.
"$bin" summary runs --tsv --no-group --target 4.5 --target-on eval > eval_rows.tsv ||
  bad "summary --target-on eval"
log=$(field rows.tsv 1 run)
"$bin" export "$log" > train.tsv && "$bin" export "$log" --table eval > eval.tsv
want=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++){if($i=="loss")k=i; if($i=="step")s=i}; next}
  {l[NR]=$k; n=NR-1<10?NR-1:10; m=0; for(j=NR-n+1;j<=NR;j++) m+=l[j]; if(!f && m/n<=4.5){print $s; f=1}}
  END{if(!f) print "inf"}' train.tsv)
check "train steps to target" '[ "$(field rows.tsv 1 steps_to_target)" = "$want" ]'
[ "$want" != inf ] && want=$(awk -F'\t' -v w="$want" 'NR==1{for(i=1;i<=NF;i++){if($i=="samples")k=i; if($i=="step")s=i}; next} $s==w{print $k*16}' train.tsv)
check "train tokens to target" '[ "$(field rows.tsv 1 tokens_to_target)" = "$want" ]'
want=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++){if($i=="loss")k=i; if($i=="step")s=i}; next}
  !f && $k<=4.5 {print $s; f=1} END{if(!f) print "inf"}' eval.tsv)
check "eval steps to target" '[ "$(field eval_rows.tsv 1 eval_steps_to_target)" = "$want" ]'
check "eval rule only" '[ "$(field eval_rows.tsv 1 steps_to_target)" = NO_COLUMN ]'
"$bin" summary runs --tsv --target 0.01 --target-on eval > never.tsv
check "not reached: inf, 0 runs" '[ "$(field never.tsv 1 eval_steps_to_target)" = inf ] && [ "$(field never.tsv 1 eval_time_to_target_reached)" = 0 ]'
expect 0 "steps to eval loss" -- "$bin" summary runs --target 4.5 --target-on eval --wide
expect 0 "eval_steps_to_target" -- "$bin" summary runs --target 4.5 --target-on eval --tsv --rank eval_steps_to_target
expect 2 "one of train, eval" -- "$bin" summary runs --target 4.5 --target-on val
expect 2 "needs --target" -- "$bin" summary runs --target-on eval
expect 2 "not a summary column" -- "$bin" summary runs --rank nope

# Plots: PNG signature and a real size; the summary plots only where the runs vary.
expect 0 "wrote runs/plots/time_to_target_vs_bandwidth.png" -- "$bin" plot runs --target 4.5
# With a target: its line on the evaluation plot against time, and the time-to-target
# Pareto figures (one per bandwidth), written or skipped with a reason.
check "target line" 'grep -q "target: loss" runs/plots/eval_bits_per_byte_vs_sim_time.gp'
expect 0 "pareto_time_to_target_vs_wire_bytes_100Mbps" -- "$bin" plot runs --target 4.5 --out ttt
for png in train_loss_vs_step train_loss_vs_sim_time eval_bits_per_byte_vs_step \
           eval_bits_per_byte_vs_sim_time time_to_target_vs_bandwidth \
           pareto_loss_vs_wire_bytes pareto_loss_vs_sim_time_100Mbps pareto_loss_vs_sim_time_1Gbps; do
  f="runs/plots/$png.png"
  check "$f is a PNG" '[ "$(head -c 8 "$f" | od -An -tx1 | tr -d " \n")" = 89504e470d0a1a0a ]'
  check "$f is not trivial" '[ "$(stat -c %s "$f")" -gt 10000 ]'
  check "$f has its script" '[ -s "runs/plots/$png.gp" ]'
done
# Against bytes, the two networks of a codec are one point, named without net.*.
check "pareto bytes: one point per codec" '[ "$(grep -vc "^#" runs/plots/data/pareto_loss_vs_wire_bytes.tsv)" -eq 2 ] && ! grep -q net= runs/plots/data/pareto_loss_vs_wire_bytes.tsv'
expect 0 "skipped final_bits_per_byte_vs_fw_bits: the runs do not vary the bits" -- "$bin" plot runs --out elsewhere
check "--out" '[ -s elsewhere/train_loss_vs_step.png ] && [ -d elsewhere/data ]'
expect 0 "skipped time_to_target_vs_bandwidth: no --target" -- "$bin" plot runs/none_1Gbps_1.h5
# The seed band of a group (none at 100Mbps: runs 1 and 2) at the last step: mean, min and n of
# the two runs' smoothed losses; --per-seed draws one line per run instead.
last() { awk -F'\t' -v c="$2" '!/^#/ { v = $c } END { print v }' "$1"; }
a=$(last runs/plots/data/run1_none_100Mbps_1.train.tsv 4) b=$(last runs/plots/data/run2_none_100Mbps_2.train.tsv 4)
check "band mean of two seeds" 'close "$(last runs/plots/data/train_loss_group1.tsv 3)" "$(awk -v a="$a" -v b="$b" "BEGIN{printf \"%.12g\", (a+b)/2}")"'
check "band min of two seeds" 'close "$(last runs/plots/data/train_loss_group1.tsv 4)" "$(awk -v a="$a" -v b="$b" "BEGIN{print (a<b?a:b)}")"'
check "band n" '[ "$(last runs/plots/data/train_loss_group1.tsv 6)" = 2 ]'
check "band drawn" 'grep -q filledcurves runs/plots/train_loss_vs_step.gp'
check "the band's legend entry with two seeds" 'grep -q "keyentry.*over seeds" runs/plots/train_loss_vs_step.gp'
"$bin" plot runs/none_1Gbps_1.h5 --out oneseed > /dev/null || bad "plot of one run"
check "no band legend entry with one seed" '[ -f oneseed/train_loss_vs_step.gp ] && ! grep -q keyentry oneseed/train_loss_vs_step.gp'
check "title: workload and networks" 'grep -q "gpt on text, several networks" runs/plots/train_loss_vs_step.gp'
"$bin" plot runs --out perseed --per-seed > /dev/null || bad "plot --per-seed"
check "--per-seed: a line per run" '[ "$(grep -o "[.]train[.]tsv" perseed/train_loss_vs_step.gp | wc -l)" -eq 4 ] && ! grep -q filledcurves perseed/train_loss_vs_step.gp'
# The channel figure: q4 has a relative error at boundary 0, no run a delta norm.
check "channel rel_error PNG" '[ "$(stat -c %s runs/plots/channel_by_epoch_fw_rel_error.png)" -gt 10000 ]'
check "channel data" 'grep -q "boundary 0" runs/plots/data/channel_by_epoch_fw_rel_error_line1.tsv && awk -F"\t" "!/^#/ && !(\$2 > 0) { exit 1 }" runs/plots/data/channel_by_epoch_fw_rel_error_line1.tsv'
expect 0 "skipped channel_by_epoch_fw_delta_norm: no run logs a nonzero" -- "$bin" plot runs --out elsewhere2

# Bad inputs.
echo "not a run log" > junk.h5
mkdir -p empty
expect 2 "no such run log or folder: missing.h5" -- "$bin" summary missing.h5
expect 3 "junk.h5" -- "$bin" summary junk.h5
expect 3 "junk.h5" -- "$bin" plot junk.h5
expect 2 "holds no run log" -- "$bin" summary empty
expect 2 "exclude each other" -- "$bin" summary runs --tsv --md
expect 2 "smooth" -- "$bin" plot runs --smooth 0
expect 1 "gnuplot" -- env PATH=/nonexistent "$bin" plot runs --out nognuplot

finish test_summary.sh
