#!/usr/bin/env bash
# Redraws the README's pictures from their text sources in docs/img/:
#   architecture.dot   -> architecture.png   (libraries, their floors, link arrows)
#   step-dataflow.dot  -> step-dataflow.png  (one training step across modules)
# Before drawing, checks that the links listed in architecture.dot (between its
# BEGIN LINKS and END LINKS lines) are exactly the target_link_libraries of the
# libraries' CMakeLists.txt files, so the picture cannot drift from the build;
# then drops the links implied by others (tred) and draws at 2x, for a sharp
# picture at the README's ~900 px. Needs graphviz (dot, tred); it is not a build
# or test dependency: the PNGs are committed.
#   scripts/diagrams.sh          check and redraw
#   scripts/diagrams.sh --check  only compare architecture.dot with the CMakeLists.txt files
set -euo pipefail
cd "$(dirname "$0")/.."
img=docs/img
dpi=192

# Every target_link_libraries between slowpipe targets (and to the interface
# targets of libtorch, HDF5 and c10's headers), as "from -> to" with the node
# names of architecture.dot.
cmake_links() {
  local dir
  for dir in common pipeline netmodel compressors/codecs compressors/channels models/facts \
    models/torch whatif runlog config sim study/summary study/sweeps distributed cli; do
    sed 's/#.*//' "$dir/CMakeLists.txt"
  done | tr '\n' ' ' | grep -o 'target_link_libraries([^)]*)' |
    sed 's/target_link_libraries(//; s/)//' |
    while read -r target rest; do
      for dep in $rest; do
        case "$dep" in
          PUBLIC | PRIVATE | INTERFACE) ;;
          slowpipe::* | slowpipe_*) echo "$(node_name "$target") -> $(node_name "$dep")" ;;
        esac
      done
    done | sort -u
}

node_name() {
  case "$1" in
    slowpipe) echo slowpipe_bin ;;
    slowpipe-torch) echo slowpipe_torch_bin ;;
    slowpipe_torch) echo libtorch ;;
    slowpipe::*) echo "${1#slowpipe::}" ;;
    slowpipe_*) echo "${1#slowpipe_}" ;;
    *) echo "$1" ;;
  esac
}

dot_links() {
  sed -n '/BEGIN LINKS/,/END LINKS/p' "$img/architecture.dot" |
    grep -- '->' | sed 's/;.*//; s/^ *//; s/ *$//' | sort -u
}

if ! diff <(cmake_links) <(dot_links) > /dev/null; then
  echo "diagrams: $img/architecture.dot does not list the links of the CMakeLists.txt files" >&2
  echo "  (< only in CMakeLists.txt, > only in architecture.dot):" >&2
  diff <(cmake_links) <(dot_links) | grep '^[<>]' >&2 || true
  exit 1
fi
echo "diagrams: architecture.dot lists the $(cmake_links | wc -l) links of the CMakeLists.txt files"
[ "${1:-}" = --check ] && exit 0

for tool in dot tred; do
  if ! command -v "$tool" > /dev/null; then
    echo "diagrams: '$tool' not found: install graphviz (apt install graphviz)" >&2
    exit 2
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tred "$img/architecture.dot" > "$tmp/architecture.dot"
dot -Tpng -Gdpi=$dpi "$tmp/architecture.dot" -o "$img/architecture.png"
dot -Tpng -Gdpi=$dpi "$img/step-dataflow.dot" -o "$img/step-dataflow.png"
echo "diagrams: wrote $img/architecture.png and $img/step-dataflow.png"
