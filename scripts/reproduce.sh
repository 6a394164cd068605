#!/usr/bin/env bash
# The reproductions of the source papers' findings (experiments/reproduce/,
# docs/reproduce.md): each is a sweep file whose [claim] states the finding and
# the criterion; `slowpipe sweep` runs it (resumably: complete runs are
# skipped) and writes results/reproduce/<name>/summary.md with the verdict.
#   scripts/reproduce.sh BUILD_DIR [NAME...]   NAME: a1 a2 r1 r23 r4 p1 p1m t1 b1 rb1 m1 (default: all)
#   or a1-long, a1-long-lr: A1 at 10 epochs and its lower-rate variant, about
#   an hour of CPU each, never part of the default set
#   or ladder (a1-scale a1-long-scale t1-scale p1m-scale rb1-scale m1-scale), or
#   one of those: the model-size ladder (docs/scale.md), about 6 CPU-hours, never in the default
#   set; its per-size pretraining (experiments/sweeps/scale-pretrain.ini) runs
#   first, resumably, and is timed in cpu.tsv as scale-pretrain
# Environment: SCALE=K multiplies each experiment's epochs and data (default 1;
# results go to results/reproduce/<name>-xK), DTYPE=bf16 trains every run in
# bf16 (run.dtype; results in results/reproduce/<name>[-xK]-bf16, compared with
# the committed fp32 results, saved with SAVE=1 beside them as <name>[-xK]-bf16;
# docs/reproduce.md, "A1 and T1 in bf16"), JOBS=N runs N at a time
# (default: the cores). Appends the CPU time of each sweep to
# results/reproduce/cpu.tsv and writes results/reproduce/verdicts.md.
# After each sweep, where committed results exist (experiments/reproduce/
# results/<name>[-xK]/), `slowpipe verdict --compare` writes
# results/reproduce/<name>/compare.md and prints whether this machine agrees;
# SAVE=1 instead refreshes the committed folder (`slowpipe verdict --save`)
# from a finished sweep.
set -euo pipefail
build="${1:?usage: scripts/reproduce.sh BUILD_DIR [NAME...]}"
shift
bin="$build/bin/slowpipe"
scale="${SCALE:-1}"
jobs="${JOBS:-$(nproc)}"
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(a1 a2 r1 r23 r4 p1 p1m t1 b1 rb1 m1)
export OMP_NUM_THREADS=1

sweeps=()
for n in "${names[@]}"; do
  case "$n" in
    a1 | a2 | r23 | r4 | p1 | p1m | t1 | b1 | rb1 | m1 | a1-long | a1-long-lr) sweeps+=("$n") ;;
    a1-scale | a1-long-scale | t1-scale | p1m-scale | rb1-scale | m1-scale) sweeps+=("$n") ;;
    r1) sweeps+=(r1-cnn r1-gpt) ;;
    ladder) sweeps+=(a1-scale a1-long-scale t1-scale p1m-scale rb1-scale m1-scale) ;;
    *) echo "reproduce: unknown experiment '$n' (a1, a2, r1, r23, r4, p1, p1m, t1, b1, rb1, m1, a1-long, a1-long-lr, ladder, a1-scale, a1-long-scale, t1-scale, p1m-scale, rb1-scale, m1-scale)" >&2; exit 2 ;;
  esac
done
case "$scale" in '' | *[!0-9]* | 0) echo "reproduce: SCALE must be a positive integer" >&2; exit 2 ;; esac
suffix=""
[ "$scale" -gt 1 ] && suffix="-x$scale"
dtype="${DTYPE:-fp32}"
case "$dtype" in fp32 | bf16) ;; *) echo "reproduce: DTYPE must be fp32 or bf16" >&2; exit 2 ;; esac
dsuffix="" dtype_args=()
[ "$dtype" = fp32 ] || dsuffix="-$dtype"

# The ladder's files load their own size's checkpoint (scale-pretrain), the
# others make demo's.
demo=0 ladder=0
for s in "${sweeps[@]}"; do
  if grep -q 'scale-pretrain' "experiments/reproduce/$s.ini"; then ladder=1
  elif grep -q 'demo-finetune' "experiments/reproduce/$s.ini"; then demo=1; fi
done
[ "$demo" = 1 ] && scripts/pretrain.sh "$bin"
# The committed results of sweep $1: compared with this run, or (SAVE=1)
# rewritten from it. Neither stops the other experiments.
# A DTYPE run is compared with the committed fp32 results and saved beside them.
compare_or_save() {
  local ini="experiments/reproduce/$1.ini" committed="experiments/reproduce/results/$1$suffix"
  local out="results/reproduce/$1$suffix$dsuffix"
  if [ "${SAVE:-0}" = 1 ]; then
    "$bin" verdict "$ini" --scale "$scale" --dir "$out" --save "$committed$dsuffix" || status=$?
  elif [ -d "$committed" ]; then
    "$bin" verdict "$ini" --scale "$scale" --dir "$out" --compare "$committed" --out "$out/compare.md" \
      2>&1 | grep '^compare' || status=$?
    echo "   beside the committed results: $out/compare.md"
  fi
}

mkdir -p results/reproduce
[ -f results/reproduce/cpu.tsv ] || printf 'experiment\tscale\tcpu_s\twall_s\tdate\n' > results/reproduce/cpu.tsv
status=0
# slowpipe sweep FILE ARGS..., its CPU (all runs) and wall time appended to cpu.tsv as NAME.
timed_sweep() {  # NAME SCALE FILE ARGS...
  local name=$1 k=$2 start u0 s0 u1 s1 tck cpu wall
  shift 2
  start=$(date +%s)
  read -r u0 s0 < <(awk '{print $14+$16, $15+$17}' /proc/$$/stat)
  "$bin" sweep "$@" -j "$jobs" || status=$?
  read -r u1 s1 < <(awk '{print $14+$16, $15+$17}' /proc/$$/stat)
  tck=$(getconf CLK_TCK)
  cpu=$(( (u1 + s1 - u0 - s0) / tck ))
  wall=$(( $(date +%s) - start ))
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$k" "$cpu" "$wall" "$(date -u +%FT%TZ)" >> results/reproduce/cpu.tsv
  echo "== $name: CPU ${cpu} s (all runs), wall ${wall} s"
}
if [ "$ladder" = 1 ]; then
  echo "== the ladder's pretraining: slowpipe sweep experiments/sweeps/scale-pretrain.ini (complete sizes are skipped)"
  timed_sweep scale-pretrain 1 experiments/sweeps/scale-pretrain.ini
  [ "$status" -eq 130 ] && exit 130
  [ "$status" -eq 0 ] || { echo "reproduce: the ladder's pretraining failed" >&2; exit "$status"; }
fi
for s in "${sweeps[@]}"; do
  echo "== reproduce $s (scale $scale): slowpipe sweep experiments/reproduce/$s.ini"
  [ "$dtype" = fp32 ] || dtype_args=(--set "run.dtype=$dtype" --out "results/reproduce/$s$suffix$dsuffix")
  timed_sweep "$s$dsuffix" "$scale" "experiments/reproduce/$s.ini" --scale "$scale" "${dtype_args[@]}"
  [ "$status" -eq 130 ] && exit 130
  compare_or_save "$s"
done

# One line per finding from every summary.md present.
{
  echo "| experiment | verdict |"
  echo "|---|---|"
  for f in results/reproduce/*/summary.md; do
    d=$(basename "$(dirname "$f")")
    grep -o '^\*\*Verdict[^*]*\*\*' "$f" | sed 's/\*\*//g; s/^Verdict:* *//' |
      while read -r v; do echo "| $d | $v |"; done
  done
} > results/reproduce/verdicts.md
echo
cat results/reproduce/verdicts.md
echo "reports: results/reproduce/*${suffix}/summary.md; CPU times: results/reproduce/cpu.tsv"
exit "$status"
