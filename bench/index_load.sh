#!/usr/bin/env bash
# What opening a huge index costs each process (issue 26): bench/python/index_load.py over an
# index.json of --shards shards of --samples samples (no shard files: opening reads none),
# written as one dataset and as Mosaic's merge_index writes --parts sub-datasets, each opened
# by ferry (the node's first process, then the others through the binary form), by a bare
# parse of the JSON, and - with --mosaic-src, a checkout of Mosaic Streaming's source passed by
# path, never committed - by Mosaic Streaming; and 8 processes opening an empty cache folder at
# once (with --base, also an older checkout's build/release module); and the next process's open
# with a copy of the index as the dataset's mirror.
#   bench/index_load.sh [--shards 100000] [--samples 100] [--parts 2000] [--rounds 3]
#                       [--mosaic-src PATH] [--base DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

shards=100000 samples=100 parts=2000 rounds=3 mosaic=() base=()
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --mosaic-src) mosaic=(--mosaic-src "$2"); shift 2 ;;
    --base) base=(--base "$(cd "$2" && pwd)/build/release/python"); shift 2 ;;
    *) echo "usage: $0 [--shards N] [--samples N] [--parts N] [--rounds N] [--mosaic-src PATH]" \
         "[--base DIR]" >&2
       exit 2 ;;
  esac
done

# shellcheck source=bench/bench_data.sh
. bench/bench_data.sh
tool=$bin/bench/ferry-index-load-bench
for layout in one merged; do
  dir=$work/index-$layout-$shards
  [ "$layout" = one ] && with_parts=1 || with_parts=$parts
  "$tool" generate "$dir" --shards "$shards" --samples "$samples" --parts "$with_parts"
  # The same index in a second place: opened as the dataset's mirror.
  rm -rf "$dir-mirror"
  cp -r "$dir" "$dir-mirror"
  echo "### $([ "$layout" = one ] && echo "one dataset" || echo "merged from $parts sub-datasets")"
  echo
  PYTHONPATH=$bin/python /usr/bin/python3 bench/python/index_load.py "$dir" --bench "$tool" \
    --rounds "$rounds" --mirror "$dir-mirror" "${mosaic[@]}" "${base[@]}"
  echo
  rm -rf "$dir" "$dir-mirror"
done
