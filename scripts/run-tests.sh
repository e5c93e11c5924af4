#!/usr/bin/env bash
# Runs the whole test suite of one build (default: the dev preset): the unit, compatibility and
# CLI tests in parallel; then, each with its own set of the loopback servers of
# scripts/test-servers.sh, the integration tests one at a time (some stop and restart a server,
# which would disturb a neighbour) with FERRY_LOG=debug, and beside them the Python package's
# pytest suite, also with FERRY_LOG=debug. Finally both logs are searched for the secrets of their
# servers, which must never appear. The servers are always stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-dev}

ctest --preset "$preset" -LE integration -j2 --timeout 600

# Variables from servers started earlier in this shell would point the tests at dead ports.
unset $(env | grep -o '^FERRY_TEST_[A-Z0-9_]*' || true)
python_state=build/test-servers-python
stop_servers() {
  scripts/test-servers.sh stop >/dev/null 2>&1 || true
  scripts/test-servers.sh stop --state "$python_state" >/dev/null 2>&1 || true
}
trap stop_servers EXIT

# The Python package (tests/python) against the release build's module: the dev build is
# sanitized and cannot be loaded into an uninstrumented interpreter.
python_build=${FERRY_PYTHON_BUILD:-build/release}
if [ ! -d "$python_build/python/ferry" ]; then
  echo "no Python module in $python_build/python (run make build first)"
  exit 1
fi
# The integration suite's servers first: their start installs the npm servers when needed, which
# two starts at once must not both do.
eval "$(scripts/test-servers.sh start --quiet)"
log=build/test-servers/integration-debug.log
mkdir -p "$python_state"
python_log=$python_state/pytest-debug.log
python_out=$python_state/pytest.out
(
  unset $(env | grep -o '^FERRY_TEST_[A-Z0-9_]*' || true)
  servers=$(scripts/test-servers.sh start --quiet --state "$python_state" 2>"$python_out") ||
    exit 1
  eval "$servers"
  PYTHONPATH="$PWD/$python_build/python" FERRY_LOG=debug /usr/bin/python3 -m pytest -q -s \
    -p no:cacheprovider tests/python > "$python_out" 2> "$python_log"
) &
python_pid=$!

status=0
FERRY_LOG=debug ctest --preset "$preset" -L integration -j1 --timeout 600 --verbose > "$log" 2>&1 ||
  status=$?
python_status=0
wait "$python_pid" || python_status=$?
if [ "$status" -ne 0 ]; then
  tail -n 80 "$log"
  echo "integration tests failed; full log: $log"
fi
grep -E "tests passed|Total Test time" "$log" || true
if [ "$python_status" -ne 0 ]; then
  tail -n 60 "$python_out"
  echo "Python tests failed; output: $python_out, log: $python_log"
else
  tail -n 1 "$python_out"
fi
[ "$status" -eq 0 ] && [ "$python_status" -eq 0 ] || exit 1

# No secret of a server set in the debug log of the tests that used it.
leaks=0
check_log() {  # LOG STATE: the log, and the state folder of the servers its tests used
  local log=$1 line name value key_line secrets=()
  while IFS= read -r line; do
    name=${line%%=*} value=${line#*=}
    case "$name" in
      FERRY_TEST_MOTO_AUTH_SECRET_KEY|FERRY_TEST_AZURITE_KEY|FERRY_TEST_AZURE_CLIENT_SECRET|\
      FERRY_TEST_AZURE_FEDERATED_TOKEN|FERRY_TEST_AZURE_IDENTITY_HEADER) secrets+=("$value") ;;
      FERRY_TEST_GOOGLE_SUBJECT_TOKEN|FERRY_TEST_DATABRICKS_TOKEN|\
      FERRY_TEST_DATABRICKS_CLIENT_SECRET) secrets+=("$value") ;;
      # The identity server's client certificate: its key's first line of base64 stands for it.
      FERRY_TEST_AZURE_CLIENT_CERTIFICATE) key_line=$(sed -n 2p "$value"); secrets+=("$key_line") ;;
      # The Google files: the service account key's first line, the user's secret and token.
      FERRY_TEST_GOOGLE_KEY|FERRY_TEST_GOOGLE_USER)
        while IFS= read -r key_line; do secrets+=("$key_line"); done < <(
          /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["private_key"].splitlines()[1] if "private_key" in d else d["client_secret"])
if "refresh_token" in d: print(d["refresh_token"])' "$value") ;;
    esac
  done < "$2/env"
  [ ${#secrets[@]} -ge 12 ] || { echo "$2/env lacks the servers' secrets"; leaks=1; }
  for value in "${secrets[@]}"; do
    if grep -qF -- "$value" "$log"; then
      echo "a test server's secret appears in $log"
      leaks=1
    fi
  done
  if grep -qE "Signature=[0-9a-f]{16}|[?&]sig=[^R&]" "$log"; then
    echo "a request signature appears in $log"
    leaks=1
  fi
  # A JSON Web Token (an Entra ID access token, a client assertion): header.claims...; Google's
  # and the loopback Databricks workspace's OAuth tokens.
  if grep -qE "eyJ[A-Za-z0-9_-]{8,}\.eyJ|ya29\.[A-Za-z0-9_-]{16}|dbx-oauth-[A-Za-z0-9_-]{8}" \
       "$log"; then
    echo "a token appears in $log"
    leaks=1
  fi
}
check_log "$log" build/test-servers
check_log "$python_log" "$python_state"
[ "$leaks" -eq 0 ] || exit 1
echo "no secret in the debug logs of the integration and Python suites" \
  "($(cat "$log" "$python_log" | wc -l) lines)"
