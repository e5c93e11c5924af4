#!/usr/bin/env bash
# WebDataset beside MDS (issue 22): the benchmark's 10,000 synthetic JPEGs as MDS shards and as
# WebDataset tars of the same samples (`ferry convert --to webdataset` of the MDS dataset), both
# on s3rver behind ferry-wan at one RTT, streamed by `ferry stream` (2 epochs, shuffled, every
# byte of every sample read),
# alternately, --rounds times each. Each run is held against the ceiling of the emulated link
# measured just before and just after it (ferry-fetch-bench: every shard of that dataset with 16
# requests in flight), as bench/stream_bench.sh does.
#   bench/webdataset_bench.sh [--rtt 100] [--size 64mb] [--rounds 2] [--total-mbps 250]
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=100
size=64mb
rounds=2
total_mbps=250
while [ $# -gt 0 ]; do
  case "$1" in
    --rtt) rtt=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --total-mbps) total_mbps=$2; shift 2 ;;
    *) echo "usage: $0 [--rtt MS] [--size SIZE] [--rounds N] [--total-mbps N]" >&2; exit 2 ;;
  esac
done

bin=${FERRY_BENCH_BIN:-build/release}
ferry=$bin/src/cli/ferry
work=build/bench
src=$work/images-10000
if [ ! -f "$src.complete" ]; then
  rm -rf "$src"
  "$bin/bench/data/ferry-make-images" "$src" --count 10000 --classes 1000 --seed 7
  touch "$src.complete"
fi
mds=$work/mds-$size
wds=$work/wds-$size
if [ ! -f "$mds/index.json" ] || ! grep -q '"data"' "$mds/index.json"; then
  "$ferry" convert "$src" "$mds" -q --size-limit "$size" --overwrite > /dev/null
fi
rm -rf "$wds"
"$ferry" convert "$mds" "$wds" --to webdataset -q --size-limit "$size" > /dev/null

# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
"$ferry" cp -r -q --jobs 8 "$mds" "s3://$bucket/mds-$size" > /dev/null
"$ferry" cp -r -q --jobs 8 "$wds" "s3://$bucket/wds-$size" > /dev/null

half=$(awk -v r="$rtt" 'BEGIN { print r / 2 }')
rm -f "$work/wan.port"
"$bin/bench/ferry-wan" --target "127.0.0.1:$s3_port" --delay-ms "$half" \
  --total-mbps "$total_mbps" --port-file "$work/wan.port" > "$work/wan.log" 2>&1 &
wan_pid=$!
for _ in $(seq 100); do [ -s "$work/wan.port" ] && break; sleep 0.05; done
export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$work/wan.port")

ceiling() {  # $1: the shards' key prefix
  "$bin/bench/ferry-fetch-bench" many --bucket "$bucket" --prefix "$1" --inflight 16 |
    awk '{ for (i = 1; i <= NF; i++) if ($i == "MB/s") print $(i - 1) }'
}
# Warms the server (node's JIT, its file handles) for both: measured cold, the first run reads
# ~30 % slower.
ceiling "mds-$size/shard." > /dev/null
ceiling "wds-$size/shard-" > /dev/null

printf '| format | round | shards | bytes | ceiling MB/s | epoch 1 samples/s | epoch 1 MB/s | vs ceiling | first sample s | epoch 2 samples/s |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for round in $(seq "$rounds"); do
  for format in mds wds; do
    if [ "$format" = mds ]; then prefix="mds-$size/shard."; else prefix="wds-$size/shard-"; fi
    before=$(ceiling "$prefix")
    cache=$work/wdsbench-cache
    rm -rf "$cache"
    "$ferry" stream "s3://$bucket/$format-$size" --local "$cache" --epochs 2 --shuffle --touch \
      --json > "$work/wdsbench.json"
    after=$(ceiling "$prefix")
    bytes=$(cat "$cache"/shard* | wc -c)
    shards=$(ls "$cache" | grep -c '^shard')
    /usr/bin/python3 - "$work/wdsbench.json" "$format" "$round" "$shards" "$bytes" "$before" \
      "$after" <<'PY'
import json, sys
path, fmt, rnd, shards, nbytes, before, after = sys.argv[1:]
ceiling = (float(before) + float(after)) / 2
e1, e2 = [json.loads(l) for l in open(path) if l.startswith("{")]
name = "MDS" if fmt == "mds" else "WebDataset"
print(f"| {name} | {rnd} | {shards} | {int(nbytes) / 1e6:.0f} MB | {ceiling:.0f} "
      f"({float(before):.0f}, {float(after):.0f}) | {e1['samples_per_s']:.0f} | "
      f"{e1['mb_per_s']:.0f} | {e1['mb_per_s'] / ceiling:.2f} | "
      f"{e1['time_to_first_sample_s']:.3f} | {e2['samples_per_s']:.0f} |")
PY
  done
done
kill "$wan_pid"; wait "$wan_pid" 2>/dev/null || true; wan_pid=""
