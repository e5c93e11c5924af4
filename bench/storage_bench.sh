#!/usr/bin/env bash
# Object-store transport benchmark (issue 3), against s3rver on loopback:
#   1. 10,000 objects of ~110 KB (the synthetic JPEGs of bench/data) fetched through ferry's
#      transport with 16, 64 and 256 requests in flight, beside boto3 with a 64-thread pool;
#   2. one 1 GiB object read as one stream and as 16 ranged parts at once.
# Also times the uploads (ferry cp -r, multipart put). Starts and stops its own servers.
#   bench/storage_bench.sh [--images N]
set -euo pipefail
cd "$(dirname "$0")/.."
images=10000
[ "${1:-}" = "--images" ] && images=$2

bin=build/release
src=build/bench/images-$images
if [ ! -f "$src.complete" ]; then
  rm -rf "$src"
  "$bin/bench/data/ferry-make-images" "$src" --count "$images" --classes 1000 --seed 7
  touch "$src.complete"
fi

stop_servers() { scripts/test-servers.sh stop >/dev/null 2>&1 || true; }
trap stop_servers EXIT
eval "$(scripts/test-servers.sh start --quiet)"
export AWS_ENDPOINT_URL=$FERRY_TEST_S3RVER_ENDPOINT AWS_ACCESS_KEY_ID=$FERRY_TEST_S3RVER_ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$FERRY_TEST_S3RVER_SECRET_KEY AWS_REGION=us-east-1
bucket=$FERRY_TEST_S3RVER_BUCKET

echo "== upload: ferry cp -r of $images files to s3rver"
"$bin/src/cli/ferry" cp -r -q --jobs 64 "$src" "s3://$bucket/images"

echo "== fetch $images objects (server: s3rver on loopback, $(nproc) cores shared with it)"
"$bin/bench/ferry-fetch-bench" many --bucket "$bucket" --prefix images/ --inflight 16,64,256
/usr/bin/python3 bench/storage/boto3_fetch.py --bucket "$bucket" --prefix images/ --threads 64

echo "== one 1 GiB object"
big=build/bench/one-gib.bin
[ -f "$big" ] || head -c $((1 << 30)) /dev/urandom > "$big"
"$bin/src/cli/ferry" cp -q "$big" "s3://$bucket/big/one-gib.bin"
"$bin/bench/ferry-fetch-bench" one --bucket "$bucket" --key big/one-gib.bin --parts 1,4,16
