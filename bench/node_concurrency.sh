#!/usr/bin/env bash
# Several processes of one node reading one cache folder (issue 4, node_download_concurrency):
# four `ferry stream` processes, the ranks of a 1x4x1 world, read the shuffled 64 MB-shard
# dataset of bench/stream_bench.sh from s3rver through ferry-wan at RTT 100 ms into one empty
# cache folder, with each setting given, in rounds. Prints the wall time until all four are done,
# the most connections to the proxy open at once (ss, sampled every 20 ms; curl's idle
# connections count) and the connections and requests the proxy saw.
#   bench/node_concurrency.sh [--rounds 3] ["--node-concurrency 4" ...]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
if [ "${1:-}" = "--rounds" ]; then rounds=$2; shift 2; fi
[ $# -gt 0 ] || set -- "" "--node-concurrency 4" "--node-concurrency 2"
bin=build/release
work=build/bench
ds=$work/mds-64mb
if [ ! -f "$ds/index.json" ]; then
  echo "no $ds: run bench/stream_bench.sh --sizes 64mb first" >&2
  exit 1
fi
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
"$bin/src/cli/ferry" cp -r -q --jobs 8 "$ds" "s3://$bucket/64mb" > /dev/null
cache=$work/node-cache
printf '| setting | wall s | most connections open | proxy connections | proxy requests |\n'
printf '|---|---|---|---|---|\n'
for _ in $(seq "$rounds"); do
  for setting in "$@"; do
    rm -f "$work/wan.port"
    "$bin/bench/ferry-wan" --target "127.0.0.1:$s3_port" --delay-ms 50 \
      --port-file "$work/wan.port" > "$work/wan.log" 2>&1 &
    wan_pid=$!
    for _ in $(seq 100); do [ -s "$work/wan.port" ] && break; sleep 0.05; done
    port=$(cat "$work/wan.port")
    rm -rf "$cache"
    start=$(date +%s%N)
    pids=()
    for rank in 0 1 2 3; do
      # shellcheck disable=SC2086  # the setting is a list of options
      AWS_ENDPOINT_URL=http://127.0.0.1:$port "$bin/src/cli/ferry" stream "s3://$bucket/64mb" \
        --local "$cache" --shuffle --touch --world 1,4,1 --rank "$rank" $setting > /dev/null &
      pids+=($!)
    done
    most=0
    while kill -0 "${pids[@]}" 2>/dev/null; do
      n=$(ss -Htn state established "( dport = :$port )" | wc -l)
      [ "$n" -gt "$most" ] && most=$n
      sleep 0.02
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    end=$(date +%s%N)
    kill "$wan_pid"; wait "$wan_pid" 2>/dev/null || true; wan_pid=""
    /usr/bin/python3 - "$work/wan.log" "${setting:-(none)}" "$start" "$end" "$most" <<'PY'
import json, sys
log, setting, start, end, most = sys.argv[1:]
stats = json.loads(open(log).read().splitlines()[-1])
print(f"| {setting} | {(int(end) - int(start)) / 1e9:.2f} | {most} | {stats['connections']} | "
      f"{stats['requests']} |")
PY
  done
done
rm -rf "$cache"
