#!/usr/bin/env bash
# What the download integrity checks cost on epoch 1: `ferry stream` of the 64 MB-shard dataset
# (bench/data's 10,000 JPEGs, 625 MB) from s3rver on loopback - the worst case for their share,
# since no network stands between ferry and the bytes - in three settings:
#   all       the default: a digest record per shard file (XXH3 as the bytes land) and each
#             download checked against the MD5 the store sends (s3rver's ETag)
#   records   --no-store-checksums: the digest records only
#   none      --no-digest-records --no-store-checksums
# run in alternation for --rounds rounds (so that drift hits each alike), each epoch 1 from an
# empty cache. Prints the median epoch-1 MB/s and CPU seconds of each, and the ratio to none.
#   bench/integrity_cost.sh [--rounds 5]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
# shellcheck source=bench/bench_data.sh
. bench/bench_data.sh
upload_bench_mds 64mb
url=s3://$bucket/64mb
# A pass to warm the server first (node's JIT, its file handles): cold, the first run reads a
# fraction of the rest.
"$bin/src/cli/ferry" stream "$url" --local "$work/integrity-cache" --epochs 1 -q > /dev/null
declare -A flags=([all]="" [records]="--no-store-checksums"
                  [none]="--no-digest-records --no-store-checksums")
declare -A rates=() cpus=()
for round in $(seq "$rounds"); do
  for setting in all records none; do
    cache=$work/integrity-cache
    rm -rf "$cache"
    # shellcheck disable=SC2086  # the flags are words
    out=$( { TIMEFORMAT='cpu %U %S'; time "$bin/src/cli/ferry" stream "$url" \
      --local "$cache" --epochs 1 --json -q ${flags[$setting]}; } 2>&1)
    rate=$(echo "$out" | grep -o '"mb_per_s": [0-9.]*' | grep -o '[0-9.]*$')
    cpu=$(echo "$out" | awk '$1 == "cpu" { print $2 + $3 }')
    rates[$setting]+="$rate "
    cpus[$setting]+="$cpu "
    echo "round $round $setting: $rate MB/s, $cpu CPU s" >&2
  done
done
rm -rf "$work/integrity-cache"
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
none_rate=$(echo "${rates[none]}" | median)
none_cpu=$(echo "${cpus[none]}" | median)
printf '| setting | epoch 1 MB/s (median of %s) | vs none | CPU s | vs none |\n|---|---|---|---|---|\n' "$rounds"
for setting in all records none; do
  rate=$(echo "${rates[$setting]}" | median)
  cpu=$(echo "${cpus[$setting]}" | median)
  awk -v s="$setting" -v r="$rate" -v nr="$none_rate" -v c="$cpu" -v nc="$none_cpu" \
    'BEGIN { printf "| %s | %.0f | %.3f | %.2f | %.3f |\n", s, r, r / nr, c, c / nc }'
done
