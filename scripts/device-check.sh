#!/usr/bin/env bash
# The checks only a GPU can run, as one command (docs/cuda.md, "The prepared
# device check"): on a machine with an NVIDIA GPU and python3's CUDA torch,
#   1. builds slowpipe-torch and test_engine against that torch, with the
#      Debian packages of scripts/device-deps.sh unpacked into a folder of
#      their own (never into /);
#   2. reruns test_engine there (the checkpoint-removal fix of docs/cuda.md);
#   3. trains seven GPT shapes for a few steps with run.dtype = bf16 and
#      writes, per shape, the median measured step (compute_s) against the
#      shaped clock of the GPU at hand (sim_step_time_s of a one-stage run:
#      compute only), and the fp32 demo step for reference.
# Writes OUT/steps.tsv, OUT/build.log, OUT/test_engine.log, OUT/runs.log and
# OUT/machine.txt (nvidia-smi, torch and CUDA versions).
#   scripts/device-check.sh OUT                  on the GPU machine, from the repository root
#   scripts/device-check.sh --measure-only --bin build/bin/slowpipe-torch --device cpu \
#       --shapes small OUT                        the measuring half anywhere (a CPU run)
# Options: --gpu H100|H200 (default: from nvidia-smi), --steps N (default 12; the
# first third is warm-up), --deps DIR (default .devdeps).
set -euo pipefail

measure_only=0 bin=build-cuda/bin/slowpipe-torch device=cuda gpu='' shapes=all steps=12
deps=.devdeps out=''
while [ $# -gt 0 ]; do
  case "$1" in
    --measure-only) measure_only=1; shift ;;
    --bin) bin=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --gpu) gpu=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --deps) deps=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "device-check: unknown option '$1'" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "device-check: no output folder (usage: see --help)" >&2; exit 2; }
case "$shapes" in all|small) ;; *) echo "device-check: --shapes all|small, got '$shapes'" >&2; exit 2 ;; esac
[ "$steps" -ge 3 ] 2>/dev/null || { echo "device-check: --steps must be 3 or more" >&2; exit 2; }
mkdir -p "$out"
work=$(mktemp -d)

build() {
  local root=/tmp/slowpipe-devroot prefix torch_prefix
  ls "$deps"/*.deb >/dev/null 2>&1 ||
    { echo "device-check: no packages in $deps (run scripts/device-deps.sh first)" >&2; exit 1; }
  mkdir -p "$root"
  for f in "$deps"/*.deb; do dpkg -x "$f" "$root"; done
  prefix=$root/usr
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  export LD_LIBRARY_PATH=$prefix/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu/hdf5/serial${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLOWPIPE_BUILD_BENCH=OFF \
    -DSLOWPIPE_LINK_ORDER=OFF -DCMAKE_PREFIX_PATH="$prefix;$torch_prefix" \
    -DHDF5_ROOT="$prefix/lib/x86_64-linux-gnu/hdf5/serial" >"$out/build.log" 2>&1
  cmake --build build-cuda -j "$(nproc)" --target slowpipe-torch test_engine >>"$out/build.log" 2>&1
  echo "device-check: built ($(grep -c . "$out/build.log") lines of log)"
  timeout 300 build-cuda/tests/sim/test_engine >"$out/test_engine.log" 2>&1 &&
    echo "device-check: test_engine passed" || echo "device-check: test_engine FAILED (see test_engine.log)"
}

# name layers d_model heads seq_len batch [dtype]: one line of steps.tsv.
measure() {
  local name=$1 layers=$2 d=$3 heads=$4 seq=$5 batch=$6 dtype=${7:-bf16} log=$work/$1.h5
  timeout 180 "$bin" train --config experiments/presets/demo-pretrain.ini --set run.steps="$steps" \
    --set run.out="$log" --set run.save= --set data.name=text --set data.path=docs/netmodel.md \
    --set data.begin=0 --set data.end=1 --set eval.every=0 --set eval.at_start=false \
    --set model.layers="$layers" --set model.d_model="$d" --set model.heads="$heads" \
    --set model.seq_len="$seq" --set pipeline.batch_size="$batch" --set run.dtype="$dtype" \
    --set run.device="$device" --set net.compute="shaped:$gpu" >>"$out/runs.log" 2>&1 ||
    { echo "device-check: the run of $name failed (runs.log)" >&2; return 0; }
  local params
  params=$("$bin" export "$log" --attrs | awk -F'\t' '$1 == "model.parameters" {print $2}')
  "$bin" export "$log" | awk -F'\t' -v skip=$((steps / 3)) -v name="$name" -v p="$params" \
    -v shape="$layers	$d	$heads	$seq	$batch	$dtype" -v tokens=$((seq * batch)) '
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    $col["step"] > skip { m[++n] = $col["compute_s"]; s[n] = $col["sim_step_time_s"] }
    function median(a, k,   i, j, t) {
      for (i = 2; i <= k; ++i) for (j = i; j > 1 && a[j - 1] > a[j]; --j) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
      mm = median(m, n); ss = median(s, n)
      printf "%s\t%s\t%s\t%d\t%.6f\t%.6f\t%.0f\t%.0f\t%+.1f%%\n", name, shape, p, n, mm, ss,
             tokens / mm, tokens / ss, 100 * (ss - mm) / mm
    }' >>"$out/steps.tsv"
}

if [ "$measure_only" = 0 ]; then
  { nvidia-smi 2>&1 || true; python3 -c 'import torch; print("torch", torch.__version__, "cuda",
    torch.version.cuda)' 2>&1 || true; } >"$out/machine.txt"
  build
fi
[ -x "$bin" ] || { echo "device-check: no binary at $bin" >&2; exit 1; }
if [ -z "$gpu" ]; then
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
    *H200*) gpu=H200 ;;
    *H100*) gpu=H100 ;;
    *) echo "device-check: name the GPU with --gpu (nvidia-smi gave none known)" >&2; exit 2 ;;
  esac
fi
printf 'shape\tlayers\td_model\theads\tseq_len\tbatch\tdtype\tparameters\tsteps\tmeasured_s\tclock_s\tmeasured_tokens_per_s\tclock_tokens_per_s\tclock_error\n' >"$out/steps.tsv"
case "$shapes" in
  small)  # a minute on a CPU: the script's own check
    measure demo 4 128 4 64 16
    measure demo-fp32 4 128 4 64 16 fp32
    measure narrow 2 64 2 32 8 ;;
  all)
    measure demo 4 128 4 64 16
    measure demo-fp32 4 128 4 64 16 fp32
    measure mid 6 384 6 256 16
    measure gpt2-small 12 768 12 1024 8
    measure long-seq 12 768 12 2048 4
    measure wide 12 2048 16 512 8
    measure gpt2-medium 24 1024 16 1024 8
    measure gpt2-large 36 1280 20 1024 4 ;;
esac
echo "device-check: $device, clock shaped:$gpu"
column -t -s $'\t' "$out/steps.tsv"
rm -rf "$work"
