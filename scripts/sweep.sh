#!/usr/bin/env bash
# Runs the cross product of forward specs, backward specs and networks, one
# `slowpipe train` each, into results/<name>/, then plots loss against step and
# against simulated time.
#
#   scripts/sweep.sh --name NAME [--fw 'none;q4;aq(q2)'] [--bw 'none;q8'] \
#                    [--net '100Mbps;1Gbps'] [--bin build/sim/slowpipe] -- [train args...]
#
# Lists are separated by ';' (spec strings contain ',' and ':'). Everything after
# '--' goes to every `slowpipe train` (e.g. --config FILE --set run.steps=200).
set -euo pipefail

name="" fw="none" bw="none" net="" bin="build/sim/slowpipe"
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name="$2"; shift 2 ;;
    --fw) fw="$2"; shift 2 ;;
    --bw) bw="$2"; shift 2 ;;
    --net) net="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "sweep.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$name" ] || { echo "sweep.sh: --name is required" >&2; exit 2; }
[ -x "$bin" ] || { echo "sweep.sh: $bin not found: run 'make build' first" >&2; exit 2; }

out="results/$name"
mkdir -p "$out"
IFS=';' read -r -a fws <<<"$fw"
IFS=';' read -r -a bws <<<"$bw"
IFS=';' read -r -a nets <<<"${net:-default}"
runs=()
for f in "${fws[@]}"; do
  for b in "${bws[@]}"; do
    for n in "${nets[@]}"; do
      tag=$(printf '%s_%s_%s' "$f" "$b" "$n" | tr -c 'A-Za-z0-9._-' '_')
      file="$out/$tag.h5"
      netargs=()
      [ "$n" = "default" ] || netargs=(--net "$n")
      echo "sweep: fw=$f bw=$b net=$n -> $file"
      "$bin" train "$@" --fw "$f" --bw "$b" "${netargs[@]}" \
        --set run.out="$file" --set run.overwrite=true \
        --set "run.label=fw=$f bw=$b${n:+ net=$n}"
      runs+=("$file")
    done
  done
done
scripts/plot.sh "$bin" "$out/loss_vs_step.png" --table train --x step --y loss "${runs[@]}"
scripts/plot.sh "$bin" "$out/loss_vs_sim_time.png" --table train --x sim_time_s --y loss "${runs[@]}"
echo "sweep: ${#runs[@]} runs and plots in $out/"
