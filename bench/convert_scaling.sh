#!/usr/bin/env bash
# Conversion throughput against Dask worker count: an ImageFolder of N synthetic JPEGs on s3rver
# behind ferry-wan at RTT ms, converted into a local folder by ferry.convert.files_to_mds on a
# Dask LocalCluster of 1, 2, 4 ... worker processes, and by one `ferry convert` process in the
# same run (the baseline). Each worker's part fetches its files with many requests in flight,
# so workers add connections and CPU for encoding and hashing.
#   bench/convert_scaling.sh [--images N] [--rtt MS] [--workers "1 2 4"] [--repeat R]
set -euo pipefail
cd "$(dirname "$0")/.."

images=2000 rtt=50 workers="1 2 4" repeat=3
while [ $# -gt 0 ]; do
  case "$1" in
    --images) images=$2; shift 2 ;;
    --rtt) rtt=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "usage: $0 [--images N] [--rtt MS] [--workers LIST] [--repeat R]" >&2; exit 2 ;;
  esac
done

bin=build/release
work=${FERRY_BENCH_DIR:-build/bench}
src=$work/images-$images
mkdir -p "$work"
if [ ! -f "$src.complete" ]; then
  rm -rf "$src"
  "$bin/bench/data/ferry-make-images" "$src" --count "$images" --classes 10 --seed 7
  touch "$src.complete"
fi
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
"$bin/src/cli/ferry" cp -r -q --jobs 16 "$src" "s3://$bucket/convert-scaling/images" > /dev/null
half=$(awk -v r="$rtt" 'BEGIN { print r / 2 }')
rm -f "$work/wan.port"
"$bin/bench/ferry-wan" --target "127.0.0.1:$s3_port" --delay-ms "$half" \
  --port-file "$work/wan.port" > "$work/wan.log" 2>&1 &
wan_pid=$!
for _ in $(seq 100); do [ -s "$work/wan.port" ] && break; sleep 0.05; done
export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$work/wan.port")
echo "RTT $rtt ms (ferry-wan in front of s3rver)"
PYTHONPATH=$bin/python /usr/bin/python3 bench/python/convert_scaling.py \
  "s3://$bucket/convert-scaling/images" "$work/convert-scaling" --files "$images" \
  --workers "$workers" --repeat "$repeat"
