#!/usr/bin/env bash
# run.kernels (docs/reproducibility.md):
#  - the log records the kernels a run used (kernels.* root attributes);
#  - `portable` runs give the same losses bit for bit whatever kernels the
#    host would pick natively: here two "hosts" are stood in for by capping
#    oneDNN's ISA (DNNL_MAX_CPU_ISA) and OpenBLAS's cache-size hint; the
#    control shows the native losses do move with the same caps where the CPU
#    has more than AVX2 (on an AVX2-only CPU the control is reported, not
#    asserted);
#  - a kernel variable already in the environment is kept and warned about;
#  - portable is refused on a GPU device and names why.
#   tests/cli/test_kernels.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# No pin of this machine's own may leak into the runs below.
unset OPENBLAS_CORETYPE ATEN_CPU_CAPABILITY DNNL_MAX_CPU_ISA SLOWPIPE_KERNELS_PINNED

# A small residual CNN (convolutions: oneDNN natively) cut into 2 stages.
cnn=(--set model.name=cnn --set data.name=fashion-mnist --set model.channels=8
     --set model.layers=2 --set data.limit=256 --set run.steps=8 --set pipeline.stages=2
     --set pipeline.batch_size=16 --set optim.name=sgd --set optim.lr=0.05 --set eval.every=0
     --set run.progress=none --fw q4)
losses() { "$bin" export "$1" | cut -f3,5; }  # loss and grad_norm, full precision
attr() { "$bin" export "$1" --attrs | awk -F'\t' -v k="$2" '$1 == k { print $2 }'; }

run() {  # OUT [ENV=VALUE...] -- [--set ...]: one CNN run, quiet
  local out="$1"
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$bin" train "${cnn[@]}" --out "$out" "$@" >"$out.txt" 2>&1 ||
    bad "run $out failed: $(tail -2 "$out.txt")"
}

run p_host.h5 -- --set run.kernels=portable
run p_capped.h5 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_L2_SIZE=256 -- --set run.kernels=portable
run n_host.h5 -- --set run.kernels=native
run n_capped.h5 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_L2_SIZE=256 -- --set run.kernels=native

# 1. What the log records.
[ "$(attr p_host.h5 kernels.policy)" = portable ] && ok || bad "kernels.policy of a portable run"
[ "$(attr p_host.h5 kernels.onednn)" = off ] && ok || bad "portable: oneDNN not off"
[ "$(attr n_host.h5 kernels.onednn)" = on ] && ok || bad "native: oneDNN not on"
[ "$(attr p_host.h5 kernels.aten_capability)" = avx2 ] && ok || bad "portable: ATen not avx2"
core=$(attr p_host.h5 kernels.openblas_core)
if [ "$core" != "not OpenBLAS" ]; then
  [ "$core" = Haswell ] && ok || bad "portable: OpenBLAS core '$core', expected Haswell"
fi

# 2. Portable losses do not move with the host's kernel choice.
if [ -n "$(losses p_host.h5)" ] && [ "$(losses p_host.h5)" = "$(losses p_capped.h5)" ]; then
  ok
else
  bad "portable losses differ between the native and the capped oneDNN/OpenBLAS settings"
fi
# The control: the same caps do move the native losses on a CPU beyond AVX2.
if grep -q avx512f /proc/cpuinfo; then
  [ "$(losses n_host.h5)" != "$(losses n_capped.h5)" ] && ok ||
    bad "control: native losses did not change with oneDNN capped to AVX2 on an AVX-512 CPU"
else
  echo "note: no AVX-512 on this CPU: the native control is not asserted"
fi

# 3. A kernel variable already set is kept, and said.
run p_env.h5 ATEN_CPU_CAPABILITY=default -- --set run.kernels=portable
grep -q "the environment sets ATEN_CPU_CAPABILITY=default" p_env.h5.txt && ok ||
  bad "portable: no warning for a preset ATEN_CPU_CAPABILITY"
[ "$(attr p_env.h5 kernels.aten_capability)" = default ] && ok ||
  bad "portable overrode a preset ATEN_CPU_CAPABILITY"

# 4. Refusals.
expect 2 "computes on a GPU" -- "$bin" train "${cnn[@]}" --set run.kernels=portable \
  --set run.device=cuda --out gpu.h5
[ ! -e gpu.h5 ] && ok || bad "a refused portable run wrote its log"
expect 2 "bad value for 'run.kernels'" -- "$bin" train "${cnn[@]}" --set run.kernels=fast \
  --out bad.h5

finish test_kernels
