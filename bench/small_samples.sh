#!/usr/bin/env bash
# Small-sample benchmark: `ferry stream` of 600,000 samples of 1,000 bytes in 64 MB shards (ten
# shards: the shape of tokenized text), read in place and through a cache from s3rver, in shard
# order and shuffled, two epochs each. What it measures is the engine's per-sample work - the
# planner, the shard lookups - which 100 KB samples hide.
#   bench/small_samples.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release
work=build/bench
ds=$work/small-600k
if [ ! -f "$ds/index.json" ]; then
  rm -rf "$ds"
  PYTHONPATH=$bin/python:python /usr/bin/python3 -c "
import os, sys, ferry
payload = os.urandom(1000)
with ferry.MDSWriter(out=sys.argv[1], columns={'x': 'bytes'}, size_limit='64mb') as w:
    w.write_many({'x': payload} for _ in range(600000))
" "$ds"
fi
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
"$bin/src/cli/ferry" cp -r -q --jobs 8 "$ds" "s3://$bucket/small" > /dev/null

printf '| source | order | epoch 1 s | epoch 1 samples/s | epoch 2 s | epoch 2 samples/s |\n'
printf '|---|---|---|---|---|---|\n'
for source in "in place" "s3rver"; do
  for order in "shard order" "shuffled"; do
    args=(--epochs 2 --json)
    [ "$order" = shuffled ] && args+=(--shuffle)
    if [ "$source" = "in place" ]; then
      url=$ds
    else
      url=s3://$bucket/small
      rm -rf "$work/small-cache"
      args+=(--local "$work/small-cache")
    fi
    "$bin/src/cli/ferry" stream "$url" "${args[@]}" | /usr/bin/python3 -c "
import json, sys
e1, e2 = [json.loads(l) for l in sys.stdin if l.startswith('{')]
print(f\"| {sys.argv[1]} | {sys.argv[2]} | {e1['seconds']:.2f} | {e1['samples_per_s']:,.0f} | \"
      f\"{e2['seconds']:.2f} | {e2['samples_per_s']:,.0f} |\")" "$source" "$order"
  done
done
