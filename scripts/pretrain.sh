#!/usr/bin/env bash
# Pretrains the byte-level GPT that the demo and the reproductions fine-tune
# (experiments/presets/demo-pretrain.ini -> results/demo/pretrain.pt), once:
# an existing checkpoint in slowpipe's format is reused (delete it to pretrain
# again; an old-format file is replaced).
#   scripts/pretrain.sh SLOWPIPE
set -euo pipefail
bin="$1"
out=results/demo
mkdir -p "$out"
if [ "$(head -c 8 "$out/pretrain.pt" 2>/dev/null | tr -d '\0')" != SLOWPIPE ]; then
  echo "== pretraining the GPT on GCIDE [0, 0.8) (once; $out/pretrain.pt is reused)"
  OMP_NUM_THREADS=1 "$bin" train --config experiments/presets/demo-pretrain.ini
else
  echo "== reusing $out/pretrain.pt (delete it to pretrain again)"
fi
