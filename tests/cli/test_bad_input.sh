#!/usr/bin/env bash
# The bad-input table of docs/bad-input.md, run as a test: every row's command
# must exit with the row's code and print the row's text on stderr. The table is
# parsed from the markdown itself, so the document and the behaviour cannot
# drift apart.
#   tests/cli/test_bad_input.sh PATH/TO/slowpipe SOURCE_DIR [ROW...]
# Commands run from SOURCE_DIR with $SLOWPIPE (the binary) and $T (a scratch
# directory holding the fixtures made below) in their environment. Give row
# numbers to run only those rows.
set -uo pipefail
SLOWPIPE=$(realpath "$1")
src=$(realpath "$2")
shift 2
only=" $* "
table="$src/docs/bad-input.md"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export SLOWPIPE T OMP_NUM_THREADS=1
per_case_s="${BAD_INPUT_TIMEOUT_S:-30}"  # a row that hangs fails, it does not stall the suite

# --- Fixtures (docs/bad-input.md lists them) -------------------------------------
fixtures() {
  cd "$T" || exit 1
  mkdir -p adirectory sub fm
  for i in $(seq 1 300); do echo "pipeline stage $i sends compressed activations over a slow link"; done >corpus.txt
  : >empty.txt
  gzip -c corpus.txt >full.txt.gz
  head -c $(($(stat -c %s full.txt.gz) / 2)) full.txt.gz >trunc.txt.gz
  # The tiny model every train row uses (fast when a check is missing). The
  # data path is absolute: the sub/*.ini rows test the relative form.
  cat >small.ini <<INI
[run]
steps = 2
overwrite = true
progress = none
[model]
name = gpt
layers = 2
d_model = 32
heads = 2
seq_len = 16
[data]
name = text
path = $T/corpus.txt
[pipeline]
stages = 2
batch_size = 8
[eval]
batches = 1
INI
  printf '[run]\nsteps = 2\nsteps = 3\n' >dup.ini
  printf '[run]\nsteps = 2\x00\nseed = 7\n' >nul.ini
  printf '[run\nsteps = 2\n' >badsection.ini
  printf '[run]\nstesp = 2\n' >unknownkey.ini
  printf '[run]\nsteps 2\n' >noequals.ini
  # Sweeps over small.ini that would run one point twice.
  printf '[sweep]\nconfig = small.ini\ncompress.fw = q4 | none | q4:nearest\n' >dupspec.ini
  printf '[sweep]\nconfig = small.ini\nrun.seed = 1 | 2 | 1\n' >dupvalue.ini
  printf '[data]\nname = text\npath = missing-corpus.txt\n' >sub/rel-data.ini
  printf '[model]\ninit_from = missing-model.pt\n' >sub/rel-ckpt.ini
  echo "not a zip archive" >notzip.pt
  echo "not an HDF5 file" >notlog.h5
  # Fashion-MNIST directory with a truncated image file.
  printf '\x00\x00\x08\x03\x00\x00\x00\x0a\x00\x00\x00\x1c' | gzip -c >fm/train-images-idx3-ubyte.gz
  cp fm/train-images-idx3-ubyte.gz fm/t10k-images-idx3-ubyte.gz
  printf '\x00\x00\x08\x01\x00\x00\x00\x0a' | gzip -c >fm/train-labels-idx1-ubyte.gz
  cp fm/train-labels-idx1-ubyte.gz fm/t10k-labels-idx1-ubyte.gz
  token_shards

  # A real log and checkpoint from two steps of the tiny model, and a checkpoint
  # of a wider model.
  "$SLOWPIPE" train --config small.ini --set run.save=good.pt --out good.h5 >fixture.log 2>&1 ||
    echo "fixture: tiny training run failed: $(tail -1 fixture.log)" >&2
  "$SLOWPIPE" train --config small.ini --set model.d_model=48 --set run.save=wide.pt \
    --out wide.h5 >>fixture.log 2>&1 ||
    echo "fixture: wide training run failed: $(tail -1 fixture.log)" >&2
  # A run killed after step 2 of 3, its resume checkpoints then deleted.
  # (`; true`: the subshell, not this script, reports the kill, into fixture.log)
  (SLOWPIPE_FAULT=step:2 "$SLOWPIPE" train --config small.ini --steps 3 \
    --set run.checkpoint_every=1 --out killed.h5; true) >>fixture.log 2>&1
  [ -f killed.h5 ] || echo "fixture: the killed run left no log: $(tail -1 fixture.log)" >&2
  rm -rf killed.h5.ckpt
  if [ -f good.pt ]; then
    size=$(stat -c %s good.pt)
    cp good.pt flipped.pt
    # 32 bytes flipped in the middle of the archive (inside the parameter data).
    printf '%032d' 0 | tr '0' '\377' | dd of=flipped.pt bs=1 seek=$((size / 2)) conv=notrunc status=none
    head -c $((size / 2)) good.pt >trunc.pt
  fi
  if [ -f good.h5 ]; then
    head -c $(($(stat -c %s good.h5) / 2)) good.h5 >trunc.h5
    damage_logs
  fi

  # netsim scenarios: one valid base, then one defect each.
  scenario() {  # scenario FILE LINKS FLOWS [EXTRA]
    printf '{"hosts": ["a", "b", "c"],\n "links": [%s],\n "flows": [%s]%s}\n' "$2" "$3" "${4:-}" >"$1"
  }
  ab='{"name": "ab", "between": ["a", "b"], "bandwidth": "1Gbps", "latency": "1ms"}'
  bc='{"name": "bc", "between": ["b", "c"], "bandwidth": "1Gbps", "latency": "1ms"}'
  f1='{"name": "f1", "from": "a", "to": "b", "bytes": "1MB"}'
  scenario ok.json "$ab, $bc" "$f1"
  scenario strat.json "$ab" '{"name": "f1", "from": "a", "to": "b", "bytes": "1MB", "strat": "0s"}'
  scenario duplx.json '{"name": "ab", "between": ["a", "b"], "bandwidth": "1Gbps", "latency": "1ms", "duplx": "half"}' "$f1"
  scenario topkey.json "$ab" "$f1" ', "flws": []'
  scenario badunit.json '{"name": "ab", "between": ["a", "b"], "bandwidth": "10Gbsp", "latency": "1ms"}' "$f1"
  scenario hugebytes.json "$ab" '{"name": "f1", "from": "a", "to": "b", "bytes": "1e300GB"}'
  scenario tinybw.json '{"name": "ab", "between": ["a", "b"], "bandwidth": "1e-320bps", "latency": "1ms"}' "$f1"
  scenario hugelat.json '{"name": "ab", "between": ["a", "b"], "bandwidth": "1Gbps", "latency": "1e999s"}' "$f1"
  scenario infstart.json "$ab" '{"name": "f1", "from": "a", "to": "b", "bytes": "1MB", "start": "1e999s"}'
  scenario selfflow.json "$ab" '{"name": "f1", "from": "a", "to": "a", "bytes": "1MB"}'
  scenario efficiency.json "$ab" "$f1" ', "efficiency": 2'
  scenario zerobw.json '{"name": "ab", "between": ["a", "b"], "bandwidth": 0, "latency": "1ms"}' "$f1"
  scenario dupflow.json "$ab" "$f1, $f1"
  scenario duplink.json "$ab, "'{"name": "ab2", "between": ["b", "a"], "bandwidth": "1Gbps", "latency": "1ms"}' "$f1"
  scenario dupname.json "$ab, "'{"name": "ab", "between": ["b", "c"], "bandwidth": "1Gbps", "latency": "1ms"}' "$f1"
  scenario unknownhost.json "$ab" '{"name": "f1", "from": "a", "to": "q", "bytes": "1MB"}'
  scenario noroute.json "$ab" '{"name": "f1", "from": "a", "to": "c", "bytes": "1MB"}'
  scenario badroute.json "$ab, $bc" '{"name": "f1", "from": "a", "to": "c", "bytes": "1MB"}' \
    ', "routes": [{"from": "a", "to": "c", "links": ["bc", "ab"]}]'
  scenario negbytes.json "$ab" '{"name": "f1", "from": "a", "to": "b", "bytes": -5}'
  scenario selflink.json '{"name": "aa", "between": ["a", "a"], "bandwidth": "1Gbps", "latency": "1ms"}' "$f1"
  printf '{"hosts": ["a", "a"], "links": [], "flows": []}\n' >duphost.json
  printf '{"hosts": ["a", "b"], "links": [' >notjson.json
  printf '[1, 2, 3]\n' >array.json
  printf '{"hosts": ["a"], "links": [], "flows": []}\0{"x": 1}\n' >nul.json
  : >empty.json
  cd "$src" || exit 1
}

# damage_logs: copies of good.h5 with one defect each, written by a small C
# program against the HDF5 C API (h5cc ships with libhdf5-dev).
# Token shards (data.name = tokens, docs/models.md, "Token shards") in tok/:
# a good one and one defect each, ids 0..255 (the byte-level GPT's vocabulary).
token_shards() {
  mkdir -p tok
  seq 0 299 | awk '{print $1 % 256}' >tok/ids.txt
  shard() { bash "$src/tests/cli/write_shard.sh" "$@" <tok/ids.txt; }
  shard tok/good.bin
  shard tok/magic.bin 20240521
  shard tok/version.bin 20240520 2
  shard tok/trunc.bin 20240520 1 301
  head -c 1000 tok/good.bin >tok/header.bin
  { cat tok/ids.txt; echo 256; } | bash "$src/tests/cli/write_shard.sh" tok/vocab.bin
}

damage_logs() {
  cat >damage.c <<'C'
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* damage FILE rows N | short COL | int COL | rank2 COL | drop COL | notable */
static void replace(hid_t g, const char* col, hid_t type, int rank) {
  hsize_t dims[2] = {2, 2};
  H5Ldelete(g, col, H5P_DEFAULT);
  hid_t s = H5Screate_simple(rank, dims, NULL);
  hid_t d = H5Dcreate2(g, col, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int buf[4] = {1, 2, 3, 4};
  double dbuf[4] = {1, 2, 3, 4};
  H5Dwrite(d, type == H5T_NATIVE_INT ? H5T_NATIVE_INT : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL,
           H5P_DEFAULT, type == H5T_NATIVE_INT ? (void*)buf : (void*)dbuf);
  H5Dclose(d);
  H5Sclose(s);
}
int main(int argc, char** argv) {
  if (argc < 3) return 2;
  hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) return 1;
  if (!strcmp(argv[2], "notable")) {
    H5Ldelete(f, "train", H5P_DEFAULT);
    return H5Fclose(f) < 0;
  }
  hid_t g = H5Gopen2(f, "train", H5P_DEFAULT);
  if (g < 0) return 1;
  if (!strcmp(argv[2], "rows")) {
    long long n = atoll(argv[3]);
    hid_t a = H5Aopen(g, "rows", H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_LLONG, &n);
    H5Aclose(a);
  } else if (!strcmp(argv[2], "short")) {
    hid_t d = H5Dopen2(g, argv[3], H5P_DEFAULT);
    hsize_t one = 1;
    H5Dset_extent(d, &one);
    H5Dclose(d);
  } else if (!strcmp(argv[2], "int")) {
    replace(g, argv[3], H5T_NATIVE_INT, 1);
  } else if (!strcmp(argv[2], "rank2")) {
    replace(g, argv[3], H5T_NATIVE_DOUBLE, 2);
  } else if (!strcmp(argv[2], "drop")) {
    H5Ldelete(g, argv[3], H5P_DEFAULT);
  }
  H5Gclose(g);
  return H5Fclose(f) < 0;
}
C
  if ! h5cc -o damage damage.c >damage.log 2>&1; then
    echo "fixture: h5cc could not build the log-damaging helper: $(tail -1 damage.log)" >&2
    return
  fi
  local name
  while read -r name args; do
    cp good.h5 "$name.h5"
    # shellcheck disable=SC2086
    ./damage "$name.h5" $args || echo "fixture: damaging $name.h5 failed" >&2
  done <<'LIST'
rows_big rows 1000000
rows_neg rows -5
short_col short loss
int_col int loss
rank2_col rank2 loss
no_train notable
LIST
}

# --- The table ------------------------------------------------------------------
# Rows look like: | 12 | area | `command` | 2 | `text` |
rows() {
  awk -F'|' '/^## The table/ {on = 1} on && /^\| *[0-9]+ *\|/ {
    n = $2; cmd = $4; code = $5; msg = $6   # $7: what the row shows
    gsub(/^ +| +$/, "", n); gsub(/^ +| +$/, "", code)
    sub(/^ *`/, "", cmd); sub(/` *$/, "", cmd)
    sub(/^ *`/, "", msg); sub(/` *$/, "", msg)
    print n "\t" code "\t" cmd "\t" msg
  }' "$table"
}

fixtures
passed=0
failed=0
total=0
while IFS=$'\t' read -r n code cmd msg; do
  [ "$only" != "  " ] && [[ "$only" != *" $n "* ]] && continue
  total=$((total + 1))
  out="$T/case_$n.out"
  err="$T/case_$n.err"
  (cd "$src" && timeout -k 5 "$per_case_s" bash -c "$cmd" >"$out" 2>"$err" </dev/null)
  rc=$?
  if [ "$rc" -eq "$code" ] && grep -qF -- "$msg" "$err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    why="exit $rc (expected $code)"
    [ "$rc" -eq 124 ] && why="timed out after ${per_case_s} s (expected exit $code)"
    [ "$rc" -eq "$code" ] && why="stderr lacks '$msg'"
    echo "FAILED row $n: $cmd" >&2
    echo "    $why; stderr: $(tr -d '\0' <"$err" | tail -c 400 | tr '\n' ' ')" >&2
  fi
done < <(rows)

if [ "$total" -lt 60 ] && [ "$only" = "  " ]; then
  echo "bad-input: the table has only $total rows (at least 60 expected)" >&2
  failed=$((failed + 1))
fi
echo "bad-input: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
