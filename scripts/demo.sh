#!/usr/bin/env bash
# The demo (`make demo`): generate a synthetic ImageFolder of JPEGs, convert it to MDS with zstd,
# inspect it, verify every shard and sample, print two samples, and sum up. Everything happens
# under build/demo (override with FERRY_DEMO_DIR); nothing outside the repository is touched.
set -euo pipefail
cd "$(dirname "$0")/.."

images=2000
classes=10
while [ $# -gt 0 ]; do
  case "$1" in
    --images) images=$2; shift 2 ;;
    --classes) classes=$2; shift 2 ;;
    *) echo "usage: $0 [--images N] [--classes C]" >&2; exit 2 ;;
  esac
done

bin=build/release
ferry=$bin/src/cli/ferry
make_images=$bin/bench/data/ferry-make-images
work=${FERRY_DEMO_DIR:-build/demo}
src=$work/images
out=$work/mds

step() { printf '\n== %s\n' "$*"; }

step "1. generate $images synthetic JPEGs in $classes classes (deterministic, seed 1): $src"
if [ -f "$src/.complete-$images-$classes" ]; then
  echo "reusing $src"
else
  rm -rf "$src"
  "$make_images" "$src" --count "$images" --classes "$classes" --seed 1
  touch "$src/.complete-$images-$classes"
fi

step "2. convert to MDS (zstd, 64mb shards, xxh64 hashes): $out"
"$ferry" convert "$src" "$out" --compression zstd --size-limit 64mb --hashes xxh64 --overwrite

step "3. inspect"
"$ferry" inspect "$out"

step "4. verify every shard and sample"
"$ferry" verify "$out"

step "5. the first two samples, as JSON"
"$ferry" cat "$out" --count 2

step "summary"
src_bytes=$(du -sb --exclude='.complete-*' "$src" | cut -f1)
out_bytes=$(du -sb "$out" | cut -f1)
shards=$(ls "$out" | grep -c '^shard\.' || true)
printf '%s files (%s MB) -> %s shards (%s MB) in %s; read them with Mosaic Streaming or ferry.\n' \
  "$images" "$((src_bytes / 1000000))" "$shards" "$((out_bytes / 1000000))" "$out"
