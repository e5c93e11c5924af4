#!/usr/bin/env bash
# Opening a dataset of many streams (issue 26): --streams small datasets (one shard of 10
# samples each) on s3rver, read through ferry-wan at one RTT, opened as one
# StreamingDataset(streams=[Stream(remote=...), ...]) into empty cache folders (the cold open:
# every stream's index.json fetched) and again with them filled (the warm open: every index
# revalidated with a HEAD). bench/python/many_streams.py runs each open in a process of its
# own: ferry, and with --base a checkout whose build/release holds an older ferry module, and
# with --mosaic-src Mosaic Streaming (a checkout of its source passed by path, never committed).
#   bench/many_streams.sh [--streams 200] [--rtt 100] [--rounds 3] [--base DIR]
#                         [--mosaic-src PATH]
set -euo pipefail
cd "$(dirname "$0")/.."

streams=200 rtt=100 rounds=3 extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --streams) streams=$2; shift 2 ;;
    --rtt) rtt=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --base) extra+=(--base "$2/build/release/python"); shift 2 ;;
    --mosaic-src) extra+=(--mosaic-src "$2"); shift 2 ;;
    *) echo "usage: $0 [--streams N] [--rtt MS] [--rounds N] [--base DIR] [--mosaic-src PATH]" >&2
       exit 2 ;;
  esac
done

# shellcheck source=bench/bench_data.sh
. bench/bench_data.sh
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
src=$work/streams-$streams
if [ ! -f "$src.complete" ]; then
  rm -rf "$src"
  PYTHONPATH=$bin/python /usr/bin/python3 - "$src" "$streams" <<'PY'
import os, sys
import ferry
root, n = sys.argv[1], int(sys.argv[2])
for s in range(n):
    with ferry.MDSWriter(out=os.path.join(root, f"s{s:05d}"),
                         columns={"data": "bytes", "label": "int"}) as writer:
        for i in range(10):
            writer.write({"data": os.urandom(1000), "label": s * 10 + i})
PY
  touch "$src.complete"
fi
"$bin/src/cli/ferry" cp -r -q --jobs 16 "$src" "s3://$bucket/streams-$streams" > /dev/null
start_wan "$rtt" 0
export S3_ENDPOINT_URL=$AWS_ENDPOINT_URL

PYTHONPATH=$bin/python /usr/bin/python3 bench/python/many_streams.py \
  "s3://$bucket/streams-$streams" --streams "$streams" --local "$work/many-streams-cache" \
  --rounds "$rounds" "${extra[@]}"
rm -rf "$work/many-streams-cache"
