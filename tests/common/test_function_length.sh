#!/usr/bin/env bash
# No library function is over 60 lines (issue 24, item 5): a long function is
# several steps that deserve names. Usage: test_function_length.sh SOURCE_DIR
#
# The count is textual, on clang-formatted sources: a function opens on a line
# that ends with `{` after a `)` and whose signature starts at column 0 (a
# signature may run over several lines); it closes at the next line that starts
# with `}` at column 0. Its length is the number of lines strictly between the
# two. Lambdas, classes and functions defined inside a class body are not
# counted. Functions that cannot be split yet are listed, each with its reason,
# in function_length_allow.txt beside this script ("FILE NAME reason", where
# NAME is as this script prints it, e.g. PipelineEngine::train_step); an
# entry that no longer matches a long function is reported as stale.
set -u
src=${1:?usage: test_function_length.sh SOURCE_DIR}
limit=60
here=$(cd "$(dirname "$0")" && pwd)
allow="$here/function_length_allow.txt"

# Prints "LENGTH FILE:LINE NAME" for every function over LIMIT lines.
long_functions() {
  awk -v limit="$limit" '
    function flush() { pending = 0; depth = 0 }
    FNR == 1 { flush(); inside = 0 }
    {
      line = $0
      if (inside) {
        if (line ~ /^}/) {
          n = FNR - open_at - 1
          if (n > limit) printf "%d %s:%d %s\n", n, FILENAME, sig_at, name
          inside = 0
        }
        next
      }
      if (!pending) {
        # A signature starts at column 0 with a name, not a comment,
        # preprocessor line, closing brace or namespace.
        if (line !~ /^[A-Za-z_~:<[]/ || line ~ /^(namespace|using|template|typedef|class|struct|enum|union)([^A-Za-z0-9_]|$)/)
          next
        if (line !~ /\(/) next
        pending = 1; depth = 0; sig_at = FNR
        name = line
        sub(/\(.*/, "", name)
        sub(/.*[ *&]/, "", name)
      }
      tmp = line; opens = gsub(/\(/, "", tmp)
      tmp = line; closes = gsub(/\)/, "", tmp)
      depth += opens - closes
      if (depth <= 0 && line ~ /\)[^()]*\{[ \t]*$/) {
        inside = 1; open_at = FNR; pending = 0
      } else if (depth <= 0 && (line ~ /[;}][ \t]*$/ || line ~ /=[ \t]*\{?[ \t]*$/)) {
        flush()
      }
    }
  ' "$@"
}

# Controls: the counter finds a long function with a multi-line signature,
# and does not count a short one.
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
{
  echo 'const int kTable[] = {1, 2,'
  echo '                       3};'
  echo 'int long_one(int a,'
  echo '             int b) {'
  for i in $(seq 1 $((limit + 1))); do echo "  a += b;"; done
  echo '}'
  echo 'int short_one(int a) {'
  for i in $(seq 1 "$limit"); do echo "  a += 1;"; done
  echo '}'
} >"$tmpdir/control.cpp"
found=$(long_functions "$tmpdir/control.cpp")
if [ "$found" != "$((limit + 1)) $tmpdir/control.cpp:3 long_one" ]; then
  echo "FAIL: the counter is wrong on its control file; it found:"
  echo "$found"
  exit 1
fi

cd "$src" || exit 1
files=$(find common pipeline compressors models netmodel whatif runlog config sim study distributed cli \
  -name '*.cpp' | sort)
# shellcheck disable=SC2086
found=$(long_functions $files)
allowed=$(grep -vE '^[[:space:]]*(#|$)' "$allow" | awk '{ print $1, $2 }')

status=0
while read -r n where name; do
  [ -z "$n" ] && continue
  file=${where%%:*}
  if ! printf '%s\n' "$allowed" | grep -qxF "$file $name"; then
    echo "FAIL: $where $name is $n lines (limit $limit): split it into named steps"
    status=1
  fi
done <<<"$found"
while read -r file name; do
  [ -z "$file" ] && continue
  if ! printf '%s\n' "$found" | grep -qE "^[0-9]+ $file:[0-9]+ $name\$"; then
    echo "FAIL: stale entry in $(basename "$allow"): $file $name is no longer over $limit lines"
    status=1
  fi
done <<<"$allowed"
[ "$status" = 0 ] && echo "OK: no function over $limit lines outside the allow-list"
exit "$status"
