#!/usr/bin/env bash
# CPU per byte, stage by stage (issue 26): user+system CPU seconds per GB of shards for an
# independent client (curl 7.88's parallel transfers, 16 at once, SigV4) and for each stage of
# ferry's path, each measured alone on the same 18 shards of 64 MB (the 10,000 JPEGs of
# bench/data as a `bytes` column) on s3rver, round by round:
#   curl into /dev/null               the independent ceiling's transport
#   ferry-fetch-bench into memory     ferry's transport (16 in flight, bodies dropped)
#   curl into files                   transport + every byte written into files
#   ferry-fetch-bench into files      ferry's transport + writes (--keep)
#   ferry stream, cold cache          the engine whole: transport, cache writes, page-in, sample
#                                     split, every payload byte read (--touch)
#   cat of the cached shards          page-in alone (the shards read once into /dev/null)
#   ferry stream, warm, --touch       page-in + sample split + every payload byte read
#   ferry stream, warm                sample split alone (views, never read)
#   Python, warm                      ferry.StreamingDataset iterated in Python: each sample a
#                                     dict of `bytes` (the hand-off into Python objects)
#   Python + torch DataLoader, warm   the same under torch's DataLoader, 2 workers, batches of
#                                     64 (the hand-off across processes; all processes' CPU)
# The two Python rows are also given net of their start (the interpreter, the imports - torch's
# is 0.6 s of CPU - and opening the dataset), measured alone beside them (their median).
# The cache folder and the files are on tmpfs (--dir; the VM's shared disk moves write-heavy
# figures by 2x). Prints a markdown table: medians and ranges over --rounds.
#   bench/cpu_per_stage.sh [--rounds 3] [--dir /dev/shm/ferry-cpu]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 dir=/dev/shm/ferry-cpu
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--dir DIR]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/bench_data.sh
. bench/bench_data.sh
# shellcheck source=bench/s3rver_env.sh
. bench/s3rver_env.sh
bench_mds_bytes
ds=$work/mds-64mb-bytes
"$bin/src/cli/ferry" cp -r -q --jobs 8 "$ds" "s3://$bucket/64mb-bytes" > /dev/null
shards=("$ds"/shard.*.mds)
shard_bytes=$(cat "${shards[@]}" | wc -c)
url=s3://$bucket/64mb-bytes
sign=(--aws-sigv4 "aws:amz:us-east-1:s3" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD"
  --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY")
mkdir -p "$dir"
cache=$dir/cache
results=$dir/results.txt
: > "$results"
trap 'rm -rf "$dir"; stop_bench_servers' EXIT

# Runs the command after `--`, appending "STAGE user sys" to the results.
measure() {
  local stage=$1
  shift 2
  /usr/bin/time -f "%U %S" -o "$dir/cpu" "$@" > /dev/null
  echo "$stage $(cat "$dir/cpu")" >> "$results"
}
null_args=() file_args=()
for f in "${shards[@]}"; do
  null_args+=("$AWS_ENDPOINT_URL/$bucket/64mb-bytes/$(basename "$f")" -o /dev/null)
  file_args+=("$AWS_ENDPOINT_URL/$bucket/64mb-bytes/$(basename "$f")" -o "$dir/kept/$(basename "$f")")
done
curl_parallel=(curl -sS --fail --parallel --parallel-max 16 "${sign[@]}")
cat > "$dir/iterate.py" <<'PY'
import sys
import ferry
cache, mode = sys.argv[1], sys.argv[2]
ds = ferry.StreamingDataset(local=cache, batch_size=64)
n = 0
if mode.endswith("start"):
    if mode == "torch-start":
        import torch.utils.data  # noqa: F401
    sys.exit(0)
if mode == "python":
    for sample in ds:
        n += len(sample["data"])
else:
    import torch.utils.data
    loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=2,
                                         collate_fn=lambda s: [x["data"] for x in s])
    for batch in loader:
        n += sum(len(x) for x in batch)
assert n > 0
PY
python_iterate=(env "PYTHONPATH=$bin/python" /usr/bin/python3 "$dir/iterate.py" "$cache")

"${curl_parallel[@]}" "${null_args[@]}"  # a warm-up pass (node's JIT, its file handles)
for round in $(seq "$rounds"); do
  measure "curl into /dev/null" -- "${curl_parallel[@]}" "${null_args[@]}"
  measure "ferry-fetch-bench into memory" -- \
    "$bin/bench/ferry-fetch-bench" many --bucket "$bucket" --prefix 64mb-bytes/shard. --inflight 16
  rm -rf "$dir/kept" && mkdir -p "$dir/kept"
  measure "curl into files" -- "${curl_parallel[@]}" "${file_args[@]}"
  rm -rf "$dir/kept" && mkdir -p "$dir/kept"
  measure "ferry-fetch-bench into files" -- "$bin/bench/ferry-fetch-bench" many \
    --bucket "$bucket" --prefix 64mb-bytes/shard. --inflight 16 --keep "$dir/kept"
  rm -rf "$dir/kept" "$cache"
  measure "ferry stream, cold cache, --touch" -- \
    "$bin/src/cli/ferry" stream "$url" --local "$cache" --touch
  measure "cat of the cached shards (page-in)" -- bash -c "cat '$cache'/shard.*.mds"
  measure "ferry stream, warm, --touch" -- "$bin/src/cli/ferry" stream "$cache" --touch
  measure "ferry stream, warm (split only)" -- "$bin/src/cli/ferry" stream "$cache"
  measure "Python start" -- "${python_iterate[@]}" python-start
  measure "Python start with torch" -- "${python_iterate[@]}" torch-start
  measure "Python, warm (samples as bytes)" -- "${python_iterate[@]}" python
  measure "Python + torch DataLoader, 2 workers, warm" -- "${python_iterate[@]}" torch
  rm -rf "$cache"
done

/usr/bin/python3 - "$results" "$shard_bytes" "$rounds" <<'PY'
import statistics, sys
path, nbytes, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gb = nbytes / 1e9
rows = {}
for line in open(path):
    *stage, user, sys_ = line.split()
    rows.setdefault(" ".join(stage), []).append((float(user) / gb, float(sys_) / gb))
def cell(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"
print(f"{gb:.2f} GB of shards, {rounds} rounds; CPU seconds per GB, medians (ranges)")
print()
print("| stage | user | system | user + system |")
print("|---|---|---|---|")
starts = {"Python, warm (samples as bytes)": "Python start",
          "Python + torch DataLoader, 2 workers, warm": "Python start with torch"}
for stage, values in rows.items():
    if stage in starts.values():
        continue
    print(f"| {stage} | {cell([u for u, _ in values])} | {cell([s for _, s in values])} "
          f"| {cell([u + s for u, s in values])} |")
    if stage in starts:
        start = rows[starts[stage]]
        su = statistics.median(u for u, _ in start)
        ss = statistics.median(s for _, s in start)
        net = [(u - su, s - ss) for u, s in values]
        print(f"| {stage}, net of its start | {cell([u for u, _ in net])} "
              f"| {cell([s for _, s in net])} | {cell([u + s for u, s in net])} |")
PY
