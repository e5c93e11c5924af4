#!/usr/bin/env bash
# Runs the whole test suite of one build (default: the dev preset): the unit, compatibility and
# CLI tests in parallel, then - with the loopback object-store servers of scripts/test-servers.sh
# running - the integration tests one at a time (some stop and restart a server, which would
# disturb a neighbour), with FERRY_LOG=debug; finally that whole log is searched for the
# servers' secrets, which must never appear; with the servers still up, the Python package's
# pytest suite. The servers are always stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-dev}

ctest --preset "$preset" -LE integration -j2 --timeout 600

# Variables from servers started earlier in this shell would point the tests at dead ports.
unset $(env | grep -o '^FERRY_TEST_[A-Z0-9_]*' || true)
stop_servers() { scripts/test-servers.sh stop >/dev/null 2>&1 || true; }
trap stop_servers EXIT
eval "$(scripts/test-servers.sh start --quiet)"
log=build/test-servers/integration-debug.log
FERRY_LOG=debug ctest --preset "$preset" -L integration -j1 --timeout 600 --verbose > "$log" 2>&1 ||
  { tail -n 80 "$log"; echo "integration tests failed; full log: $log"; exit 1; }
grep -E "tests passed|Total Test time" "$log"

# The Python package (tests/python) against the release build's module: the dev build is
# sanitized and cannot be loaded into an uninstrumented interpreter. The servers are still up
# for its remote tests.
python_build=${FERRY_PYTHON_BUILD:-build/release}
if [ ! -d "$python_build/python/ferry" ]; then
  echo "no Python module in $python_build/python (run make build first)"
  exit 1
fi
PYTHONPATH="$PWD/$python_build/python" FERRY_LOG=debug /usr/bin/python3 -m pytest -q -s -p no:cacheprovider \
  tests/python 2>>"$log"

# No secret in the debug log of the whole integration suite.
leaks=0
for secret in "$FERRY_TEST_MOTO_AUTH_SECRET_KEY" "$FERRY_TEST_AZURITE_KEY"; do
  if grep -qF -- "$secret" "$log"; then
    echo "a test server's secret appears in $log"
    leaks=1
  fi
done
if grep -qE "Signature=[0-9a-f]{16}|[?&]sig=[^R&]" "$log"; then
  echo "a request signature appears in $log"
  leaks=1
fi
[ "$leaks" -eq 0 ] || exit 1
echo "no secret in the integration suite's debug log ($(wc -l < "$log") lines)"
