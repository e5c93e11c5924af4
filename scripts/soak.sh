#!/usr/bin/env bash
# make soak: the soak (tests/soak/soak.py) for SOAK_SECONDS (1200) - four jobs of a
# StreamingDataset under torch's DataLoader with two workers each, reading epoch after epoch from
# s3rver through ferry-wan (5 % faults and lies, throttling bursts) into one tight cache folder,
# one job SIGKILLed and started again every minute - checking that no sample is lost, repeated or
# corrupt and that the survivor's memory, descriptors and threads do not grow. Writes
# build/soak/summary.json. The servers are started here and stopped at the end. Further
# arguments go to soak.py (--processes, --workers, --kill-every, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${SOAK_SECONDS:-1200}
out=build/soak

unset $(env | grep -o '^FERRY_TEST_[A-Z0-9_]*' || true)
stop_servers() { scripts/test-servers.sh stop >/dev/null 2>&1 || true; }
trap stop_servers EXIT
eval "$(scripts/test-servers.sh start --quiet)"
rm -rf "$out"
PYTHONPATH=build/release/python /usr/bin/python3 tests/soak/soak.py --seconds "$seconds" \
  --out "$out" --wan build/release/bench/ferry-wan "$@"
