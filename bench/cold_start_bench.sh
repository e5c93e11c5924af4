#!/usr/bin/env bash
# Cold start and epoch 1 against an independent ceiling (issue 26): `ferry stream --epochs 1
# --shuffle --touch --batch-size B` of the 10,000 synthetic JPEGs (bench/data) in 64 MB shards,
# into an empty cache folder, from s3rver through ferry-wan at one RTT. Per run: epoch 1
# samples/s and MB/s, the time to the first sample and to the first batch of B, and the samples
# read by range (the first batch) and from downloads in progress (landed).
#
# The ceiling is measured by a client that is not ferry: curl 7.88 (Debian's), its parallel
# transfers (--parallel --parallel-max 16, SigV4-signed), fetching every shard of the dataset
# through the same proxy into /dev/null, just before and just after each run; the run is held
# against their mean; and the same into files in the bench folder (every byte written, as a cache
# must), before each run. ferry-fetch-bench (ferry's own transport, 16 in flight, into memory) is
# measured beside them. CPU: user+sys seconds per GB of shards, of curl's runs just before (into
# /dev/null, into files) and of the whole `ferry stream` process.
#
#   bench/cold_start_bench.sh [--rtt 100] [--rounds 3] [--batch 64] [--size 64mb]
#                             [--total-mbps 0] [--workers 1] [--shuffle 1] [--base BUILD_DIR]
#                             [--cache-dir DIR] [--origin s3rver|nginx]
# --base runs another checkout's release build (its build/release) alternately with this one,
# round by round (a before/after pair; its JSON may lack the newer fields). --workers runs that
# many worker threads (--world 1,1,N), as a DataLoader's workers read. --shuffle 0 reads in shard
# order (the first sample is then the first of a shard). --cache-dir holds the cache folder and
# curl's files (default build/bench; /dev/shm takes the VM's shared disk, whose write-back moves
# figures by 2x from run to run, out of the measurement). --origin nginx serves the shards from
# nginx (Debian's, unpacked by scripts/fetch-nginx.sh; static files with sendfile) instead of
# s3rver, read over http:// by ferry and curl alike, so that the server is not the ceiling
# (ferry-fetch-bench, S3 only, is left out).
set -euo pipefail
cd "$(dirname "$0")/.."

rtt=100 rounds=3 batch=64 size=64mb total_mbps=0 workers=1 shuffle=1 base="" dir=build/bench origin=s3rver
while [ $# -gt 0 ]; do
  case $1 in
    --rtt) rtt=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --total-mbps) total_mbps=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --shuffle) shuffle=$2; shift 2 ;;
    --cache-dir) dir=$2; shift 2 ;;
    --origin) origin=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    *) echo "usage: $0 [--rtt MS] [--rounds N] [--batch B] [--size SIZE] [--total-mbps N]" \
      "[--workers N] [--shuffle 0|1] [--base BUILD_DIR] [--cache-dir DIR]" \
      "[--origin s3rver|nginx]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/bench_data.sh
. bench/bench_data.sh
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
ds=$work/mds-$size
if [ "$origin" = nginx ]; then
  bench_mds "$size"
  start_nginx "$work"
else
  upload_bench_mds "$size"
fi
shards=("$ds"/shard.*.mds)
shard_bytes=$(cat "${shards[@]}" | wc -c)

if [ "$origin" = nginx ]; then
  start_wan "$rtt" "$total_mbps" "$nginx_port"
  url=$AWS_ENDPOINT_URL/mds-$size
  sign=()
else
  start_wan "$rtt" "$total_mbps"
  url=s3://$bucket/$size
  sign=(--aws-sigv4 "aws:amz:us-east-1:s3" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD"
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY")
fi
endpoint=$AWS_ENDPOINT_URL

shard_url() {
  if [ "$origin" = nginx ]; then
    echo "$url/$(basename "$1")"
  else
    echo "$endpoint/$bucket/$size/$(basename "$1")"
  fi
}
# MB/s of every shard fetched by curl's parallel transfers, 16 at once, into /dev/null - or,
# given a folder, into files there (what a cache must do: write every byte).
curl_ceiling() {
  local args=() f start end out=${1:-}
  for f in "${shards[@]}"; do
    if [ -n "$out" ]; then
      args+=("$(shard_url "$f")" -o "$out/$(basename "$f")")
    else
      args+=("$(shard_url "$f")" -o /dev/null)
    fi
  done
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$work/curl.cpu" curl -sS --fail --parallel --parallel-max 16 \
    ${sign[@]+"${sign[@]}"} "${args[@]}"
  end=$(date +%s.%N)
  awk -v b="$shard_bytes" -v s="$start" -v e="$end" 'BEGIN { printf "%.1f\n", b / 1e6 / (e - s) }'
}
curl_kept() {
  local mbps
  rm -rf "$dir/kept" && mkdir -p "$dir/kept"
  mbps=$(curl_ceiling "$dir/kept")
  rm -rf "$dir/kept"
  sync  # its gigabyte written back now, not under the next measurement
  echo "$mbps"
}
ferry_ceiling() {
  [ "$origin" = nginx ] && { echo 0; return; }
  "$bin/bench/ferry-fetch-bench" many --bucket "$bucket" --prefix "$size/shard." --inflight 16 |
    awk '{ for (i = 1; i <= NF; i++) if ($i == "MB/s") print $(i - 1) }'
}

builds=("$bin")
[ -n "$base" ] && builds=("$base/build/release" "$bin")
curl_ceiling > /dev/null  # a warm-up pass (node's JIT, its file handles)
printf '| build | round | curl ceiling MB/s (before, after) | curl into files MB/s | ferry-fetch-bench MB/s | epoch 1 samples/s | epoch 1 MB/s | vs curl ceiling | vs curl into files | first sample s | first batch of %s s | by range | landed | curl cpu s/GB (user+sys) | curl into files cpu s/GB | ferry cpu s/GB |\n' "$batch"
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for round in $(seq "$rounds"); do
  order=("${builds[@]}")
  # Alternate which build goes first.
  if [ $((round % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ]; then order=("${builds[1]}" "${builds[0]}"); fi
  for build in "${order[@]}"; do
    kept=$(curl_kept)
    kept_cpu=$(cat "$work/curl.cpu")
    fetch=$(ferry_ceiling)
    before=$(curl_ceiling)
    curl_cpu=$(cat "$work/curl.cpu")
    cache=$dir/cold-cache
    rm -rf "$cache"
    /usr/bin/time -f "%U %S" -o "$work/ferry.cpu" \
      "$build/src/cli/ferry" stream "$url" --local "$cache" --epochs 1 \
      $([ "$shuffle" = 1 ] && echo --shuffle) --touch --batch-size "$batch" --world "1,1,$workers" --json > "$work/cold.json"
    after=$(curl_ceiling)
    rm -rf "$cache"
    sync
    name=$([ "$build" = "$bin" ] && echo this || echo base)
    /usr/bin/python3 - "$work/cold.json" "$name" "$round" "$before" "$after" "$fetch" "$kept" \
      "$curl_cpu" "$kept_cpu" "$(cat "$work/ferry.cpu")" "$shard_bytes" <<'PY'
import json, sys
path, name, rnd, before, after, fetch, kept, curl_cpu, kept_cpu, ferry_cpu, nbytes = sys.argv[1:]
gb = int(nbytes) / 1e9
def per_gb(cpu):  # user+sys CPU seconds per GB of shards
    user, sys_ = (float(x) for x in cpu.split())
    return f"{user / gb:.2f}+{sys_ / gb:.2f}"
e = [json.loads(l) for l in open(path) if l.startswith("{")][0]
ceiling = (float(before) + float(after)) / 2
def get(key, fmt):
    return format(e[key], fmt) if key in e else "-"
print(f"| {name} | {rnd} | {ceiling:.0f} ({float(before):.0f}, {float(after):.0f}) | "
      f"{float(kept):.0f} | {float(fetch):.0f} | {e['samples_per_s']:.0f} | {e['mb_per_s']:.0f} | "
      f"{e['mb_per_s'] / ceiling:.2f} | {e['mb_per_s'] / float(kept):.2f} | "
      f"{e['time_to_first_sample_s']:.3f} | "
      f"{get('time_to_first_batch_s', '.3f')} | {get('direct_reads', 'd')} | "
      f"{get('landed_reads', 'd')} | {per_gb(curl_cpu)} | {per_gb(kept_cpu)} | "
      f"{per_gb(ferry_cpu)} |")
PY
  done
done
