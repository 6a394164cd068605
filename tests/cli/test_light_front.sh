#!/usr/bin/env bash
# The commands that do not train run in the light front without libtorch
# (docs/cli-startup.md): `sweep` (resolution, --dry-run, --emit-jobs, a rerun
# that has nothing left to train), `summary`, `plot` and `verdict`.
#  - ldd: the front links no libtorch, c10, OpenMP or BLAS (the same check
#    fires on slowpipe-torch);
#  - a tiny reproduction (2 points, a claim) is trained through the front;
#  - then the front is copied alone into a folder without slowpipe-torch, and
#    there: sweep --dry-run, --emit-jobs and --point of a complete point, the
#    rerun of the finished sweep (skips every point, writes summary.md through
#    verdict), summary, plot and verdict all succeed, and LD_DEBUG shows no
#    torch-side library loaded by any of them (their children included);
#  - a sweep there that would have to train refuses before starting any point,
#    with exit 1 and a message naming the missing slowpipe-torch.
#   tests/cli/test_light_front.sh PATH/TO/slowpipe SOURCE_DIR
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
expect_grep=(-qF)
torch_bin="$(dirname "$bin")/slowpipe-torch"

# torch_libs: the torch-side shared libraries named in stdin (ldd or LD_DEBUG output).
torch_libs() { grep -E 'lib(torch|c10|gomp|openblas|blas|lapack)[^/ ]*\.so' | sort -u; }
[ -z "$(ldd "$bin" | torch_libs)" ] && ok ||
  bad "the front links torch-side libraries: $(ldd "$bin" | torch_libs | tr '\n' ' ')"
ldd "$torch_bin" | torch_libs | grep -q libtorch && ok ||
  bad "slowpipe-torch does not link libtorch (check the check)"

for i in $(seq 1 200); do echo "a slow link between two stages carries compressed activations"; done >corpus.txt
cat >repro.ini <<'EOF'
[model]
layers = 2
d_model = 32
heads = 2
seq_len = 16
[data]
name = text
path = corpus.txt
limit = 32
[pipeline]
stages = 2
batch_size = 8
[run]
steps = 3
[eval]
every = 3
batches = 1
[net]
compute = fixed:0.01
[sweep]
compress.fw = none | q4
[claim]
id = L
title = the light front
claim = four-bit activations are smaller on the wire
table.t = timing --preset aqsgd-gpt2xl --fw q4 --bandwidth 1Gbps --tsv
check.P = fw_bytes[compress.fw=q4] < fw_bytes[compress.fw=none]
EOF
expect 0 "verdict P: reproduced" -- "$bin" sweep repro.ini --out out

mkdir alone
cp "$bin" alone/slowpipe
front="$work/alone/slowpipe"
# light CODE PATTERN ARGS...: `alone/slowpipe ARGS` exits CODE printing PATTERN,
# and neither it nor a child it starts loads a torch-side library.
light() {
  local code="$1" pattern="$2"
  shift 2
  expect "$code" "$pattern" -- "$front" "$@"
  local loaded
  loaded=$(LD_DEBUG=files "$front" "$@" 2>&1 >/dev/null | grep -oE 'file=[^ ]+' | torch_libs)
  [ -z "$loaded" ] && ok || bad "slowpipe $* loaded $(echo "$loaded" | head -1)"
}
light 0 "2 points" sweep repro.ini --out out --dry-run
light 0 "[done]" sweep repro.ini --out out --dry-run
light 0 "nothing to run" sweep repro.ini --out out --point 2
light 0 "2 jobs" sweep repro.ini --out out --emit-jobs jobs.txt
grep -qF "$front train" jobs.txt && ok || bad "the jobs should name the front: $(head -1 jobs.txt)"
rm out/summary.md
light 0 "2 already done" sweep repro.ini --out out
grep -qF "**Verdict: reproduced**" out/summary.md && ok ||
  bad "the rerun without slowpipe-torch should write summary.md"
light 0 "complete" summary out
light 0 "L: the light front" verdict repro.ini --dir out
if command -v gnuplot >/dev/null; then
  light 0 "" plot out --out plots
  ls plots/*.png >/dev/null 2>&1 && ok || bad "plot wrote no PNG"
fi

# A sweep that must train needs slowpipe-torch: refused before any point starts.
expect 1 "slowpipe-torch not found or not executable" -- "$front" sweep repro.ini --out fresh
[ ! -e fresh ] && ok || bad "the refused sweep created its folder"
expect 1 "slowpipe-torch not found" -- "$front" train --steps 1
# Bad input is still refused with the train option set's messages (exit 2).
expect 2 "unknown key 'model.layerz'" -- "$front" sweep repro.ini --out x --set model.layerz=2 --dry-run
expect 2 "expected one of gpt|cnn|mlp" -- "$front" sweep repro.ini --out x --set model.name=gtp --dry-run

finish light_front
