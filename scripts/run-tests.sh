#!/usr/bin/env bash
# Runs the whole test suite of one build (default: the dev preset): the unit, compatibility and
# CLI tests in parallel, then - with the loopback object-store servers of scripts/test-servers.sh
# running - the integration tests one at a time (some stop and restart a server, which would
# disturb a neighbour). The servers are always stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-dev}

ctest --preset "$preset" -LE integration -j2 --timeout 600

stop_servers() { scripts/test-servers.sh stop >/dev/null 2>&1 || true; }
trap stop_servers EXIT
eval "$(scripts/test-servers.sh start --quiet)"
ctest --preset "$preset" -L integration -j1 --timeout 600
