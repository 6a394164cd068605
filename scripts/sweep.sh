#!/usr/bin/env bash
# A thin wrapper around `slowpipe sweep` (sweep files, resume, -j, --emit-jobs:
# docs/sweep.md), for those used to calling a script.
#
#   scripts/sweep.sh [--bin build/bin/slowpipe] SWEEP.ini [slowpipe sweep options...]
set -euo pipefail

bin="build/bin/slowpipe"
if [ "${1:-}" = "--bin" ]; then
  bin="$2"
  shift 2
fi
case "${1:-}" in
  -h|--help|"") sed -n '2,6p' "$0"; [ -n "${1:-}" ] && exit 0 || exit 2 ;;
  --name|--fw|--bw|--net)
    echo "sweep.sh: lists on the command line are gone: write a sweep file ([sweep] section," \
         "values separated by '|'; docs/sweep.md) and run 'scripts/sweep.sh FILE'" >&2
    exit 2 ;;
esac
[ -x "$bin" ] || { echo "sweep.sh: $bin not found: run 'make build' first" >&2; exit 2; }
exec "$bin" sweep "$@"
