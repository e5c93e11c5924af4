#!/usr/bin/env bash
# The drop-in loop against Mosaic Streaming (issue 26): bench/python/dropin_vs_mosaic.py over the
# 10,000 synthetic JPEGs (bench/data) as raw bytes in 64 MB MDS shards on s3rver, through
# ferry-wan at one RTT (pure delay), and torch's own ceiling for handing such samples from
# DataLoader workers to the loop (the same sizes made in memory). Mosaic Streaming runs from a checkout of its source, given
# by path and never committed (e.g. `git clone https://github.com/mosaicml/streaming`); its
# Python dependencies come from Debian (scripts/install-deps.sh).
#   bench/dropin_vs_mosaic.sh --mosaic-src PATH [--rtt 100] [--rounds 3]
set -euo pipefail
cd "$(dirname "$0")/.."

rtt=100 rounds=3 mosaic=""
while [ $# -gt 0 ]; do
  case $1 in
    --mosaic-src) mosaic=$2; shift 2 ;;
    --rtt) rtt=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 --mosaic-src PATH [--rtt MS] [--rounds N]" >&2; exit 2 ;;
  esac
done
[ -f "$mosaic/streaming/__init__.py" ] || {
  echo "$0: --mosaic-src must be a checkout of mosaicml/streaming (no streaming/__init__.py in" \
    "'$mosaic')" >&2
  exit 2
}

# shellcheck source=bench/bench_data.sh
. bench/bench_data.sh
bench_mds_bytes
ds=$work/mds-64mb-bytes
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
"$bin/src/cli/ferry" cp -r -q --jobs 8 "$ds" "s3://$bucket/64mb-bytes" > /dev/null
start_wan "$rtt" 0
export S3_ENDPOINT_URL=$AWS_ENDPOINT_URL

PYTHONPATH=$bin/python /usr/bin/python3 bench/python/dropin_vs_mosaic.py \
  "s3://$bucket/64mb-bytes" --local "$work/dropin-cache" --mosaic-src "$mosaic" \
  --rounds "$rounds" --ceiling "$ds"
rm -rf "$work/dropin-cache"
