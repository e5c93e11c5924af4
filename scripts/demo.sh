#!/usr/bin/env bash
# The demo (`make demo`): generate a synthetic ImageFolder of JPEGs, convert it to MDS with zstd,
# inspect it, verify every shard and sample, print two samples; then the main job
# (scripts/demo_main_job.py): the shards and the files served from a loopback S3 server behind
# the WAN emulator at 100 ms round trip, streamed for two epochs, read by a PyTorch loop with
# ferry.diagnose, and the files read naively (one GET each), side by side. Everything happens
# under build/demo (override with FERRY_DEMO_DIR); the servers listen on 127.0.0.1 only and are
# stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

images=2000
classes=10
while [ $# -gt 0 ]; do
  case "$1" in
    --images) images=$2; shift 2 ;;
    --classes) classes=$2; shift 2 ;;
    *) echo "usage: $0 [--images N] [--classes C]" >&2; exit 2 ;;
  esac
done

bin=build/release
ferry=$bin/src/cli/ferry
make_images=$bin/bench/data/ferry-make-images
wan=$bin/bench/ferry-wan
work=${FERRY_DEMO_DIR:-build/demo}
src=$work/images
out=$work/mds

step() { printf '\n== %s\n' "$*"; }

step "1. generate $images synthetic JPEGs in $classes classes (deterministic, seed 1): $src"
if [ -f "$src/.complete-$images-$classes" ]; then
  echo "reusing $src"
else
  rm -rf "$src"
  "$make_images" "$src" --count "$images" --classes "$classes" --seed 1
  touch "$src/.complete-$images-$classes"
fi

step "2. convert to MDS (zstd, 64mb shards, xxh64 hashes): $out"
"$ferry" convert "$src" "$out" --compression zstd --size-limit 64mb --hashes xxh64 --overwrite

step "3. inspect"
"$ferry" inspect "$out"

step "4. verify every shard and sample"
"$ferry" verify "$out"

step "5. the first two samples, as JSON"
"$ferry" cat "$out" --count 2

step "6. serve the shards and the JPEG files from a loopback S3 server, behind a WAN of 100 ms RTT"
state=$work/servers
wan_pid=""
stop_servers() {
  [ -n "$wan_pid" ] && kill "$wan_pid" 2>/dev/null || true
  scripts/test-servers.sh stop --state "$state" >/dev/null 2>&1 || true
}
trap stop_servers EXIT
eval "$(scripts/test-servers.sh start --quiet --state "$state" 2>/dev/null)"
export AWS_ACCESS_KEY_ID=$FERRY_TEST_S3RVER_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$FERRY_TEST_S3RVER_SECRET_KEY
export AWS_REGION=us-east-1 AWS_ENDPOINT_URL=$FERRY_TEST_S3RVER_ENDPOINT
remote=s3://$FERRY_TEST_S3RVER_BUCKET/demo
"$ferry" cp -r -q "$out" "$remote/mds"
"$ferry" cp -r -q --jobs 32 "$src" "$remote/images"
rm -f "$work/wan.port"
"$wan" --target "${FERRY_TEST_S3RVER_ENDPOINT#http://}" --delay-ms 50 \
  --port-file "$work/wan.port" >/dev/null 2>&1 &
wan_pid=$!
for _ in $(seq 100); do [ -s "$work/wan.port" ] && break; sleep 0.05; done
export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$work/wan.port")
echo "$remote/mds and $remote/images on s3rver, reached through ferry-wan at $AWS_ENDPOINT_URL"

rm -rf "$work/cache" "$work/train-cache"
PYTHONPATH=$PWD/$bin/python /usr/bin/python3 scripts/demo_main_job.py --ferry "$ferry" \
  --url "$remote/mds" --local "$work/cache" --train-local "$work/train-cache" \
  --images "$remote/images"
