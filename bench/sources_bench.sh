#!/usr/bin/env bash
# Many sources, one dataset (docs/sources.md), side by side in one run:
#  1. Peer fetch: 4 simulated nodes - 4 processes, each with its own cache folder and peer
#     server on loopback - reading 3,000 JPEGs in 8 MB shards (344 MB) from s3rver behind
#     ferry-wan (RTT --rtt ms, all connections together capped at --mbps MB/s: the one
#     cross-cloud link the nodes share), without peers and with them: one job of 4 nodes (2
#     epochs), and 4 jobs of a node each. Reports the slowest node's
#     epochs and the bytes that crossed the emulated WAN (the proxy's count).
#  2. Mirror failover: epoch 1 of one node from two mirrors, each behind its own ferry-wan (RTT
#     --rtt ms): s3rver first, killed 2 s into the epoch, then Azurite; against Azurite alone
#     (the single healthy mirror). Reports samples/s of each.
#   bench/sources_bench.sh [--rtt 100] [--mbps 50] [--rounds 1] [--only peers|mirrors]
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=100 mbps=50 rounds=1 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rtt) rtt=$2; shift 2 ;;
    --mbps) mbps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [--rtt MS] [--mbps MBPS] [--rounds N] [--only peers|mirrors]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
# shellcheck source=bench/bench_data.sh
. bench/bench_data.sh
py() { PYTHONPATH=$bin/python /usr/bin/python3 "$@"; }

images=$work/images-3000 ds=$work/mds-8mb-3000
if [ ! -f "$images.complete" ]; then
  rm -rf "$images"
  "$bin/bench/data/ferry-make-images" "$images" --count 3000 --classes 100 --seed 7 > /dev/null
  touch "$images.complete"
fi
if [ ! -f "$ds/index.json" ]; then
  "$bin/src/cli/ferry" convert "$images" "$ds" -q --size-limit 8mb --overwrite > /dev/null
fi
run=$(date +%s)
s3_url=s3://$bucket/sources-$run
"$bin/src/cli/ferry" cp -r -q --jobs 8 "$ds" "$s3_url" > /dev/null
shard_bytes=$(du -cb "$ds"/shard.* | tail -n 1 | cut -f1)
direct=$AWS_ENDPOINT_URL

# Stops the proxy whose log is $work/wan.log; `crossed` gets the bytes it sent to the clients.
crossed_bytes=0
stop_wan() {
  kill -TERM "$wan_pid"
  while kill -0 "$wan_pid" 2>/dev/null; do sleep 0.05; done
  wan_pid=""
  crossed_bytes=$(grep -o '"bytes_to_client": [0-9]*' "$work/wan.log" | grep -o '[0-9]*$')
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# One configuration of the 4 nodes (ALGO EPOCHS), without peers and with, --rounds times: a
# table row each, the medians.
peers_rows() {
  local algo=$1 epochs=$2 jobs=${3:-} round mode out flag
  declare -A e1=() e2=() crossed=()
  for round in $(seq "$rounds"); do
    for mode in without with; do
      export AWS_ENDPOINT_URL=$direct
      start_wan "$rtt" "$mbps"
      flag=""; [ "$mode" = with ] && flag=--peers
      # shellcheck disable=SC2086  # the flag is a word or none
      out=$(py bench/python/peers_bench.py "$s3_url" --nodes 4 --epochs "$epochs" \
        --shuffle-algo "$algo" $flag $jobs)
      stop_wan
      e1[$mode]+="$(echo "$out" | py -c 'import json,sys; print(json.load(sys.stdin)["epoch_s"][0])') "
      e2[$mode]+="$(echo "$out" | py -c 'import json,sys; e = json.load(sys.stdin)["epoch_s"]; print(e[1] if len(e) > 1 else 0)') "
      crossed[$mode]+="$crossed_bytes "
      echo "round $round $algo x$epochs $mode peers: $out; WAN $crossed_bytes bytes" >&2
    done
  done
  local base
  base=$(echo "${e1[without]}" | median)
  for mode in without with; do
    awk -v a="$algo${jobs:+, a job per node}" -v n="$epochs" -v m="$mode" -v e="$(echo "${e1[$mode]}" | median)" \
      -v f="$(echo "${e2[$mode]}" | median)" -v be="$base" \
      -v b="$(echo "${crossed[$mode]}" | median)" -v s="$shard_bytes" \
      'BEGIN { printf "| %s, %d epoch%s | %s | %.1f | %.2f | %s | %.0f | %.2f |\n", a, n, (n > 1 ? "s" : ""), m, e, e / be, (n > 1 ? sprintf("%.1f", f) : "-"), b / 1e6, b / s }'
  done
}

if [ "$only" != mirrors ]; then
echo "## peer fetch: 4 nodes, RTT $rtt ms, $mbps MB/s shared; $((shard_bytes / 1000000)) MB of shards" >&2
printf '| shuffle | peers | epoch 1 s (slowest node) | vs without | epoch 2 s | WAN MB | WAN bytes / shard bytes |\n|---|---|---|---|---|---|---|\n'
# One job deals each node its own shards (docs/streaming.md): they overlap only where a node's
# span of the order crosses into another's. 4 jobs of one node each (a sweep, or the jobs of a
# region sharing their caches) read the whole dataset every one.
peers_rows py1e 2
peers_rows py1e 1 --jobs
fi
[ "$only" = peers ] && exit 0

# 2. Mirror failover. Azurite gets a ferry-wan of its own, with the same RTT and cap.
az_port=${FERRY_TEST_AZURITE_ENDPOINT#http://127.0.0.1:}
az_port=${az_port%%/*}
az_url=az://$FERRY_TEST_AZURITE_CONTAINER/sources-$run
export AZURE_STORAGE_CONNECTION_STRING=$FERRY_TEST_AZURITE_CONNECTION_STRING
"$bin/src/cli/ferry" cp -r -q --jobs 8 "$ds" "$az_url" > /dev/null
rm -f "$work/wan-az.port"
"$bin/bench/ferry-wan" --target "127.0.0.1:$az_port" --delay-ms "$(awk -v r="$rtt" 'BEGIN { print r / 2 }')" \
  --total-mbps "$mbps" --port-file "$work/wan-az.port" > "$work/wan-az.log" 2>&1 &
az_wan_pid=$!
trap 'kill $az_wan_pid 2>/dev/null || true; stop_bench_servers' EXIT
for _ in $(seq 100); do [ -s "$work/wan-az.port" ] && break; sleep 0.05; done
export AZURE_STORAGE_CONNECTION_STRING=${FERRY_TEST_AZURITE_CONNECTION_STRING//127.0.0.1:$az_port/127.0.0.1:$(cat "$work/wan-az.port")}
echo "## mirror failover: RTT $rtt ms, $mbps MB/s per mirror" >&2
declare -A rate=()
for round in $(seq "$rounds"); do
  for setting in single failover; do
    cache=$work/mirrors-cache
    rm -rf "$cache"
    export AWS_ENDPOINT_URL=$direct
    start_wan "$rtt" "$mbps"
    killer=""
    if [ "$setting" = single ]; then
      args=("$az_url")
    else
      args=("$s3_url" --mirror "$az_url")
      (sleep 2; kill -TERM "$wan_pid" 2>/dev/null || true) &
      killer=$!
    fi
    out=$("$bin/src/cli/ferry" stream "${args[@]}" --local "$cache" --epochs 1 --json -q)
    [ -n "$killer" ] && wait "$killer"
    stop_wan 2>/dev/null || true
    r=$(echo "$out" | grep -o '"samples_per_s": [0-9.]*' | grep -o '[0-9.]*$')
    rate[$setting]+="$r "
    echo "round $round $setting: $r samples/s" >&2
  done
done
rm -rf "$work/mirrors-cache"
single=$(echo "${rate[single]}" | median)
printf '\n| epoch 1 from mirrors, RTT %s ms, %s MB/s each | samples/s | vs the single healthy mirror |\n|---|---|---|\n' "$rtt" "$mbps"
for setting in single failover; do
  awk -v s="$setting" -v r="$(echo "${rate[$setting]}" | median)" -v b="$single" \
    'BEGIN { printf "| %s | %.0f | %.2f |\n", (s == "single" ? "Azurite alone (the single healthy mirror)" : "s3rver first, killed at 2 s, then Azurite"), r, r / b }'
done
