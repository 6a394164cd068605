#!/usr/bin/env bash
# A reproduction end to end, on a tiny GPT (2 codecs x 2 seeds, a few seconds):
#  - the sweep runs and writes summary.md as `slowpipe verdict`'s report, with
#    findings whose outcome is forced by deterministic numbers (wire bytes, the
#    timing model): one reproduced, one not reproduced, one inconclusive;
#  - a claim table (`slowpipe timing --tsv`) is run, saved and read;
#  - verdict --save writes the results to commit, --compare reads them back
#    (identical), and names a changed number or outcome; --save refuses a
#    sweep with runs missing;
#  - with runs missing, checks become inconclusive, not errors;
#  - bad claims are refused before anything runs (exit 2), as are `verdict`
#    without a claim and `--scale` without scale keys;
#  - --scale K multiplies the listed keys and names the folder -xK;
#  - every sweep file in experiments/reproduce/ passes its own checks
#    (--dry-run resolves every point and the claim against them);
#  - scripts/scale-gap.sh computes the size ladder's gaps from committed results;
#  - scripts/reproduce.sh refuses a DTYPE other than fp32 and bf16.
#   tests/cli/test_reproduce.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
expect_grep=(-qF)

for i in $(seq 1 200); do echo "a slow link between two stages carries compressed activations"; done >corpus.txt
cat >tiny.ini <<'EOF'
[model]
layers = 2
d_model = 32
heads = 2
seq_len = 16
[data]
name = text
path = corpus.txt
limit = 64
[pipeline]
stages = 2
batch_size = 8
[run]
epochs = 2
[eval]
every = 8
batches = 1
[net]
compute = fixed:0.01
[sweep]
compress.fw = none | q2
run.seed = 1 | 2
EOF
# q2 sends about 1/15 of fp32's forward bytes: d = B - A is about 0.93 B.
cat >claim.ini <<'EOF'
[claim]
id = T
title = a test of the verdict
claim = two-bit activations are smaller on the wire
note = forced outcomes
scale = run.epochs, data.limit
table.t = timing --preset aqsgd-gpt2xl --fw q4 --bandwidth 1Gbps,100Mbps --tsv
check.P = fw_bytes[compress.fw=q2] < fw_bytes[compress.fw=none] by 50%
check.P = t:fp32_speedup[bandwidth=100Mbps] > 1
check.N = fw_bytes[compress.fw=q2] > fw_bytes[compress.fw=none]
check.I = fw_bytes[compress.fw=q2] < fw_bytes[compress.fw=none] by 99%
check.S = train_loss[compress.fw=q2] ~ train_loss[compress.fw=q2] within 1 spread
EOF
cat tiny.ini claim.ini >repro.ini

expect 0 "4 points" -- "$bin" sweep repro.ini --dry-run --out out
expect 0 "verdict P: reproduced" -- "$bin" sweep repro.ini --out out -j 2
md=out/summary.md
for pattern in "# T: a test of the verdict" "**Verdict P: reproduced**" "**Verdict N: not reproduced**" \
  "**Verdict I: inconclusive**" "**Verdict S: reproduced**" "two-bit activations are smaller" \
  "- forced outcomes" "### Table \`t\`" "## Seed spreads" "| fw_bytes |" "![plots/" \
  "(plots/train_loss_vs_step.png)" "| compress.fw |"; do
  grep -qF -- "$pattern" "$md" && ok || bad "summary.md lacks '$pattern'"
done
[ "$(head -1 out/t.tsv | cut -f1-3)" = "$(printf 'bandwidth\tbandwidth_bps\tstep_s')" ] && ok ||
  bad "out/t.tsv header: $(head -1 out/t.tsv)"
[ "$(wc -l <out/t.tsv)" -eq 3 ] && ok || bad "out/t.tsv should hold a header and 2 rows"
# The same report by hand, to a file; a rerun of the sweep skips every point.
expect 0 "verdict N: not reproduced" -- "$bin" verdict repro.ini --dir out --out by-hand.md
diff <(grep -v 'wall times add up' by-hand.md) <(grep -v 'wall times add up' "$md") >/dev/null && ok ||
  bad "verdict --out differs from the sweep's summary.md"
expect 0 "4 already done" -- "$bin" sweep repro.ini --out out

# Committed results: --save writes summary.md, runs.tsv and checks.tsv; --compare
# reads them back beside the runs (identical here), and says what differs.
expect 2 "no committed results for repro" -- "$bin" verdict repro.ini --dir out --compare
expect 0 "saved results/repro: summary.md, runs.tsv (4 runs), checks.tsv (5 checks)" -- \
  "$bin" verdict repro.ini --dir out --save
grep -qF "**Made by.** experiment: repro; scale: 1; commit: " results/repro/summary.md && ok ||
  bad "the saved summary.md should say what made the runs"
[ "$(grep -c '^# ' results/repro/runs.tsv)" -ge 7 ] && grep -q "^# cpu: " results/repro/runs.tsv &&
  grep -qF "$(printf 'point\trun.label\trun.seed\tcompress.fw\tstatus\tsteps\ttrain_loss')" \
    results/repro/runs.tsv &&
  [ "$(grep -vc '^#' results/repro/runs.tsv)" -eq 5 ] && ok ||
  bad "runs.tsv: provenance, header and 4 runs: $(head -12 results/repro/runs.tsv)"
expect 0 "compare T: agrees (identical numbers)" -- "$bin" verdict repro.ini --dir out --compare
expect 0 "Agrees with the committed results: identical numbers" -- \
  "$bin" verdict repro.ini --dir out --compare results/repro
cp -r results/repro changed
awk -F'\t' -v OFS='\t' '/^fw=q2_seed=1\t/ {for (i = 1; i <= NF; i++) if (h[i] == "train_loss") $i *= 1.1}
  /^point\t/ {for (i = 1; i <= NF; i++) h[i] = $i} {print}' results/repro/runs.tsv >changed/runs.tsv
expect 0 "differs: run fw=q2_seed=1: train_loss" -- "$bin" verdict repro.ini --dir out --compare changed
cp results/repro/runs.tsv changed/runs.tsv
sed -i 's/^1\tP\treproduced/1\tP\tinconclusive/' changed/checks.tsv
expect 0 "differs: check 1: reproduced here, inconclusive committed" -- \
  "$bin" verdict repro.ini --dir out --compare changed
expect 2 "one at a time" -- "$bin" verdict repro.ini --dir out --save --compare
expect 2 "unexpected argument 'changed'" -- "$bin" verdict repro.ini --dir out changed

# Runs missing: the checks that read them are inconclusive, nothing fails.
rm out/fw=q2_seed=1.h5 out/fw=q2_seed=2.h5
expect 0 "verdict P: inconclusive" -- "$bin" verdict repro.ini --dir out
partial=$("$bin" verdict repro.ini --dir out 2>/dev/null)
grep -qF "selects no row" <<<"$partial" && ok || bad "a missing group should say it selects no row"
expect 2 "2 of the sweep's 4 points have a run log" -- "$bin" verdict repro.ini --dir out --save again
expect 0 "is committed but not here" -- "$bin" verdict repro.ini --dir out --compare

# Refused before anything runs.
bad_claim() {  # PATTERN CLAIM-LINES...
  local pattern="$1"
  shift
  { cat tiny.ini; echo "[claim]"; echo "id = B"; echo "title = t"; echo "claim = c"; printf '%s\n' "$@"; } >bad.ini
  expect 2 "$pattern" -- "$bin" sweep bad.ini --out bad
}
bad_claim "at least one 'check" "note = no check"
bad_claim "no comparison" "check = fw_bytes[compress.fw=q2] fw_bytes[compress.fw=none]"
bad_claim "not a summary column" "check = fw_bytez[compress.fw=q2] > 1"
bad_claim "selects no point" "check = fw_bytes[compress.fw=q4] > 1"
bad_claim "selects points that differ in compress.fw" "check = fw_bytes[run.seed=1] > 1"
bad_claim "is not a train key" "check = fw_bytes[compress.fx=q2] > 1"
bad_claim "table 'x' is not defined" "check = x:y[a=b] > 1"
bad_claim "unknown key 'colour'" "colour = red" "check = fw_bytes[compress.fw=q2] > 1"
[ ! -e bad ] && ok || bad "a refused sweep created its folder"
expect 2 "no [claim] section" -- "$bin" verdict tiny.ini --dir out
expect 2 "no such folder" -- "$bin" verdict repro.ini --dir nowhere
expect 2 "--scale needs a [claim]" -- "$bin" sweep tiny.ini --scale 2 --dry-run

# --scale: the folder and the listed keys.
expect 0 "-> results/reproduce/repro-x3/" -- "$bin" sweep repro.ini --scale 3 --dry-run
expect 0 "4 jobs" -- "$bin" sweep repro.ini --scale 3 --out scaled --emit-jobs jobs.txt
grep -qF "run.epochs=6" jobs.txt && grep -qF "data.limit=192" jobs.txt && ok ||
  bad "--scale 3 should set run.epochs=6 and data.limit=192: $(head -1 jobs.txt)"

# timing --tsv: one header and one row per bandwidth.
expect 0 "fp32_run_speedup" -- "$bin" timing --preset aqsgd-gpt2xl --fw 'aq(q4)' --bw q8 --tsv
[ "$("$bin" timing --preset aqsgd-gpt2xl --fw 'aq(q4)' --bw q8 --tsv | wc -l)" -eq 6 ] && ok ||
  bad "timing --tsv should print a header and 5 rows"

# The shipped reproductions resolve (their pretrained checkpoint may be missing
# here: then only the claim is parsed, through a copy without init_from; a
# file that varies model.init_from, one checkpoint per model size, gets ""
# for each of its values).
for f in "$src"/experiments/reproduce/*.ini; do
  out=$("$bin" sweep "$f" --dry-run 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] && grep -qF "init_from" <<<"$out"; then
    cp "$f" "copy.ini"
    sed -i "s#^config = \.\./#config = $src/experiments/#" copy.ini
    if grep -q '^model\.init_from *=' copy.ini; then
      awk '/^model\.init_from *=/ { n = split($0, v, "|"); $0 = "model.init_from = \"\""
                                     for (i = 2; i <= n; i++) $0 = $0 " | \"\"" } 1' copy.ini >copy2.ini
      mv copy2.ini copy.ini
      out=$("$bin" sweep copy.ini --dry-run 2>&1)
    else
      out=$("$bin" sweep copy.ini --dry-run --set model.init_from= 2>&1)
    fi
    rc=$?
  fi
  [ "$rc" -eq 0 ] && ok || bad "$(basename "$f"): $(echo "$out" | tail -1)"
done

# scripts/scale-gap.sh on hand-made committed results: d_model 128 from a file
# without a model.d_model column, 64 and 256 from a ladder's; the gap in
# percent of fp32's mean, the pooled seed spread as its error bar, the trend.
if command -v gnuplot >/dev/null; then
  mkdir -p committed/a1 committed/a1-scale
  printf '# experiment: a1\npoint\trun.label\trun.seed\tstatus\ttrain_loss\n' >committed/a1/runs.tsv
  printf 'p1\tfp32\t1\tcomplete\t1.0\np2\tfp32\t2\tcomplete\t1.2\n' >>committed/a1/runs.tsv
  printf 'p3\tAQ-SGD q2\t1\tcomplete\t1.21\np4\tAQ-SGD q2\t2\tcomplete\t1.21\n' >>committed/a1/runs.tsv
  printf 'p5\tAQ-SGD q2\t3\tdiverged\t\n' >>committed/a1/runs.tsv
  printf 'point\trun.label\trun.seed\tmodel.d_model\tstatus\ttrain_loss\n' >committed/a1-scale/runs.tsv
  for d in 64 256; do
    l=2.0; [ $d = 256 ] && l=1.5
    printf 'a\tfp32\t1\t%s\tcomplete\t1\nb\tfp32\t2\t%s\tcomplete\t1\n' $d $d >>committed/a1-scale/runs.tsv
    printf 'c\tAQ-SGD q2\t1\t%s\tcomplete\t%s\nd\tAQ-SGD q2\t2\t%s\tcomplete\t%s\n' $d $l $d $l >>committed/a1-scale/runs.tsv
  done
  out=$(COMMITTED=committed RUNS=none IMG=img OUT=gaps "$src/scripts/scale-gap.sh" "$bin" a1 2>&1)
  [ -s img/scale_a1.png ] && ok || bad "scale-gap.sh drew no img/scale_a1.png: $(tail -2 <<<"$out")"
  row=$(awk -F'\t' '$1 == "AQ-SGD q2" && $2 == 128 { print $3, $4, $9, $10 }' gaps/scale_a1.tsv)
  [ "$row" = "867072 2 10.0000 9.0909" ] && ok || bad "scale-gap.sh d 128 row: '$row', expected '867072 2 10.0000 9.0909'"
  grep -qF "left out, diverged: AQ-SGD q2 d_model 128 seed 3" <<<"$out" && ok || bad "scale-gap.sh should name the diverged run"
  grep -qF "AQ-SGD q2: gap +100.00% (d 64) -> +50.00% (d 256): shrinks" <<<"$out" && ok ||
    bad "scale-gap.sh trend: $(grep -F 'AQ-SGD q2: gap' <<<"$out")"
fi

# scripts/reproduce.sh refuses a DTYPE it does not train in before it runs anything.
out=$(cd "$src" && DTYPE=fp16 scripts/reproduce.sh "$PWD/nobuild" a1 2>&1)
rc=$?
[ "$rc" -eq 2 ] && grep -qF "DTYPE must be fp32 or bf16" <<<"$out" && ok ||
  bad "reproduce.sh DTYPE=fp16: exit $rc, '$out'"

finish test_reproduce
