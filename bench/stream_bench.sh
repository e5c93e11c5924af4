#!/usr/bin/env bash
# Streaming engine benchmark (issue 4): `ferry stream` of the 10,000 synthetic JPEGs (bench/data)
# in 64 MB and 256 MB shards, from s3rver through ferry-wan at RTT 0, 50 and 100 ms; epoch 1
# (cold cache) and epoch 2 (warm). Baselines measured in the same run: the ceiling of the
# emulator-plus-proxy path (every shard fetched with 16 requests in flight, ferry-fetch-bench,
# just before and just after each run; the run is held against their mean), the same with every byte written to a file as it arrives ("kept": what a cache must do), and
# `cat` of the cached shards from the page cache.
#   bench/stream_bench.sh [--rtts "0 50 100"] [--sizes "64mb 256mb"] [--parts "auto 1 8"]
#                         [--conn-mbps 25] [--total-mbps 250] [--stream-args "--cache-limit 2gb"]
# --parts lists the --download-parts values to run side by side at each point (ranged parts per
# shard; auto is the default: the engine chooses from the downloads' rates, and the table shows
# what it chose by the end of epoch 1). --conn-mbps caps each connection through the proxy, as
# a cross-cloud TCP stream is (0: pure delay); --total-mbps caps the whole link, so that it, and
# not the two cores that the server, the proxy and ferry share, limits the rate (0: no cap).
# --stream-args adds options to every `ferry stream`. FERRY_BENCH_BIN=<build/release of another
# checkout> runs that build's ferry against the same data and servers (a before/after pair).
set -euo pipefail
cd "$(dirname "$0")/.."
rtts="0 50 100"
sizes="64mb 256mb"
parts="auto"
conn_mbps=0
total_mbps=0
stream_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rtts) rtts=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --conn-mbps) conn_mbps=$2; shift 2 ;;
    --total-mbps) total_mbps=$2; shift 2 ;;
    --stream-args) stream_args=$2; shift 2 ;;
    *) echo "usage: $0 [--rtts LIST] [--sizes LIST] [--parts LIST] [--conn-mbps N]" \
      "[--total-mbps N] [--stream-args ARGS]" >&2; exit 2 ;;
  esac
done

bin=${FERRY_BENCH_BIN:-build/release}
work=build/bench
src=$work/images-10000
if [ ! -f "$src.complete" ]; then
  rm -rf "$src"
  "$bin/bench/data/ferry-make-images" "$src" --count 10000 --classes 1000 --seed 7
  touch "$src.complete"
fi

# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh

for size in $sizes; do
  ds=$work/mds-$size
  # Made again when missing, or kept from before convert named its column `data`
  # (bench/python/loader_bench.py reads these datasets by that name).
  if [ ! -f "$ds/index.json" ] || ! grep -q '"data"' "$ds/index.json"; then
    "$bin/src/cli/ferry" convert "$src" "$ds" -q --size-limit "$size" --overwrite > /dev/null
  fi
  "$bin/src/cli/ferry" cp -r -q --jobs 8 "$ds" "s3://$bucket/$size" > /dev/null
done

printf '| RTT | shards | parts | ceiling MB/s (before, after) | kept MB/s | epoch 1 samples/s | epoch 1 MB/s | vs ceiling | vs kept | first sample s | epoch 2 samples/s | epoch 2 MB/s | cat MB/s | vs cat |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for rtt in $rtts; do
  half=$(awk -v r="$rtt" 'BEGIN { print r / 2 }')
  rm -f "$work/wan.port"
  "$bin/bench/ferry-wan" --target "127.0.0.1:$s3_port" --delay-ms "$half" \
    --conn-mbps "$conn_mbps" --total-mbps "$total_mbps" --port-file "$work/wan.port" \
    > "$work/wan.log" 2>&1 &
  wan_pid=$!
  for _ in $(seq 100); do [ -s "$work/wan.port" ] && break; sleep 0.05; done
  export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$work/wan.port")
  ceiling() {
    "$bin/bench/ferry-fetch-bench" many --bucket "$bucket" --prefix "$size/shard." --inflight 16 |
      awk '{ for (i = 1; i <= NF; i++) if ($i == "MB/s") print $(i - 1) }'
  }
  for size in $sizes; do
    # A pass to warm the server first (node's JIT, its file handles): measured cold, the first
    # ceiling read ~20 % under the kept one measured after ferry's run, and flattered ferry.
    ceiling > /dev/null
    for n in $parts; do
      # The ceiling just before and just after each run, side by side with it: one measurement
      # moves by up to 40 % from the next on this machine, so the run is held against the mean.
      before=$(ceiling)
      cache=$work/stream-cache-$size-$rtt
      rm -rf "$cache"
      "$bin/src/cli/ferry" stream "s3://$bucket/$size" --local "$cache" --epochs 2 --shuffle \
        --touch --download-parts "$n" $stream_args --json > "$work/stream-$size-$rtt.json"
      after=$(ceiling)
      sync
      cat "$cache"/shard.* > /dev/null  # into the page cache
      cat_s=$( { TIMEFORMAT=%R; time cat "$cache"/shard.* > /dev/null; } 2>&1 )
      bytes=$(cat "$cache"/shard.* | wc -c)
      # The kept ceiling after the run: writing 1 GB just before would tax ferry's run with the
      # memory it churns (on this VM, freed memory goes back to the host).
      mkdir -p "$work/kept"
      kept=$("$bin/bench/ferry-fetch-bench" many --bucket "$bucket" --prefix "$size/shard." \
        --inflight 16 --keep "$work/kept" |
        awk '{ for (i = 1; i <= NF; i++) if ($i == "MB/s") print $(i - 1) }')
      # Its gigabyte is written back now, not (30 s on, as the kernel would) under the next
      # round's measurements.
      sync
      /usr/bin/python3 - "$work/stream-$size-$rtt.json" "$rtt" "$size" "$n" "$before" "$after" \
        "$cat_s" "$bytes" "$kept" <<'PY'
import json, sys
path, rtt, size, parts, before, after, cat_s, nbytes, kept = sys.argv[1:]
ceiling = (float(before) + float(after)) / 2
e1, e2 = [json.loads(l) for l in open(path) if l.startswith("{")]
cat_mbps = int(nbytes) / 1e6 / max(float(cat_s), 1e-3)
if parts == "auto":
    parts = f"auto ({e1['download_parts']})"
print(f"| {rtt} ms | {size} | {parts} | {ceiling:.0f} ({float(before):.0f}, {float(after):.0f}) | "
      f"{float(kept):.0f} | "
      f"{e1['samples_per_s']:.0f} | {e1['mb_per_s']:.0f} | {e1['mb_per_s'] / ceiling:.2f} | "
      f"{e1['mb_per_s'] / float(kept):.2f} | "
      f"{e1['time_to_first_sample_s']:.3f} | {e2['samples_per_s']:.0f} | {e2['mb_per_s']:.0f} | "
      f"{cat_mbps:.0f} | {e2['mb_per_s'] / cat_mbps:.2f} |")
PY
    done
  done
  kill "$wan_pid"; wait "$wan_pid" 2>/dev/null || true; wan_pid=""
done
