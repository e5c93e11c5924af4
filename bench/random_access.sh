#!/usr/bin/env bash
# Random access by range against whole-shard fetching (issue 26): bench/python/random_access.py
# over the 10,000 synthetic JPEGs (bench/data) in 64 MB shards on s3rver, through ferry-wan at
# one RTT (pure delay).
#   bench/random_access.sh [--rtt 100] [--counts 20,200,1000] [--rounds 2]
set -euo pipefail
cd "$(dirname "$0")/.."

rtt=100 counts=20,200,1000 rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --rtt) rtt=$2; shift 2 ;;
    --counts) counts=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--rtt MS] [--counts N,N,...] [--rounds N]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/bench_data.sh
. bench/bench_data.sh
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
upload_bench_mds 64mb
start_wan "$rtt" 0

PYTHONPATH=$bin/python /usr/bin/python3 bench/python/random_access.py "s3://$bucket/64mb" \
  --local "$work/random-access-cache" --counts "$counts" --rounds "$rounds"
rm -rf "$work/random-access-cache"
