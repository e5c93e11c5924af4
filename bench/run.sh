#!/usr/bin/env bash
# `make bench`: every benchmark that exists so far, each printing its baseline from the same
# run beside ferry's figure. Results go to stdout; docs/benchmarks.md records them.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== format inner loops (Google Benchmark; BM_CopySample is the caller's copy, the baseline)"
build/release/bench/ferry_format_benchmark --benchmark_min_time=0.5
echo
echo "== a download's digests per byte (Google Benchmark; XXH3 only is the baseline)"
build/release/bench/ferry_digest_benchmark --benchmark_min_time=0.5
echo
echo "== convert vs cp -r"
bench/convert_vs_cp.sh "$@"
echo
echo "== cross-cloud scenarios, quick grid (bench/scenarios/run.py; make bench-full for all)"
/usr/bin/python3 bench/scenarios/run.py --grid quick
