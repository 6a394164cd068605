#!/usr/bin/env bash
# Writes a token shard in the `.bin` format of train_gpt.py (docs/models.md,
# "Token shards"): a header of 256 little-endian int32 words (magic, version,
# token count, then zeros) and each token id, read from stdin one a line, as a
# little-endian uint16. Plain bash, so that the CLI checks need nothing else.
#   write_shard.sh FILE [MAGIC [VERSION [COUNT]]] < ids
# MAGIC defaults to 20240520, VERSION to 1, COUNT (the count the header
# announces; -1 or none: the number of ids given) to the truth.
set -euo pipefail
file=${1:?usage: write_shard.sh FILE [MAGIC [VERSION [COUNT]]] < ids}
magic=${2:-20240520}
version=${3:-1}
count=${4:--1}
mapfile -t ids
[ "$count" -lt 0 ] && count=${#ids[@]}
le() {  # le VALUE BYTES: VALUE's low BYTES bytes, least significant first
  local v=$1 n=$2 out='' byte i
  for ((i = 0; i < n; i++)); do
    printf -v byte '\\x%02x' $(((v >> (8 * i)) & 255))
    out+=$byte
  done
  printf '%b' "$out"
}
{
  le "$magic" 4
  le "$version" 4
  le "$count" 4
  head -c 1012 /dev/zero
  body='' pair=''
  for id in "${ids[@]}"; do
    printf -v pair '\\x%02x\\x%02x' $((id & 255)) $(((id >> 8) & 255))
    body+=$pair
  done
  printf '%b' "$body"
} >"$file"
