# shellcheck shell=bash
# Sourced by the bench scripts (from the repository root): starts the test servers, points the
# S3 environment at s3rver, and on exit stops them - and the ferry-wan proxy and nginx whose PIDs
# the script keeps in wan_pid and nginx_pid. Sets bucket and s3_port.
wan_pid="" nginx_pid=""
stop_bench_servers() {
  [ -n "$wan_pid" ] && kill "$wan_pid" 2>/dev/null || true
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
  scripts/test-servers.sh stop >/dev/null 2>&1 || true
}
trap stop_bench_servers EXIT
eval "$(scripts/test-servers.sh start --quiet 2>/dev/null)"
export AWS_ACCESS_KEY_ID=$FERRY_TEST_S3RVER_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$FERRY_TEST_S3RVER_SECRET_KEY
export AWS_REGION=us-east-1 AWS_ENDPOINT_URL=$FERRY_TEST_S3RVER_ENDPOINT
# shellcheck disable=SC2034  # used by the scripts that source this
bucket=$FERRY_TEST_S3RVER_BUCKET
# shellcheck disable=SC2034
s3_port=${FERRY_TEST_S3RVER_ENDPOINT##*:}
