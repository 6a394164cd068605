#!/usr/bin/env bash
# Small files (STYLE: headers under 300 lines, sources under 700): a file past
# its limit holds more than one idea and should be split. Counts every tracked
# C++ header (.h) and source (.cpp, .cu) of the repository, tests and
# benchmarks included. Usage: test_file_length.sh SOURCE_DIR
set -u
src=${1:?usage: test_file_length.sh SOURCE_DIR}
cd "$src" || exit 2
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files '*.h' '*.cpp' '*.cu')
else
  files=$(find . -path ./build -prune -o \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' \) -print)
fi
[ -n "$files" ] || { echo "FAIL: no C++ files found under $src" >&2; exit 1; }
over=$(echo "$files" | xargs wc -l |
  awk '$2 != "total" && (($2 ~ /\.h$/ && $1 >= 300) || ($2 ~ /\.(cpp|cu)$/ && $1 >= 700)) {print "  " $2 ": " $1 " lines"}')
n=$(echo "$files" | wc -l)
if [ -n "$over" ]; then
  echo "FAIL: files over their limit (headers < 300 lines, sources < 700):" >&2
  echo "$over" >&2
  exit 1
fi
echo "OK: $n C++ files, headers < 300 lines, sources < 700"
