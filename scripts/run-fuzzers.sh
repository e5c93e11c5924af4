#!/usr/bin/env bash
# Runs the fuzz targets, seeded from the MDS, WebDataset and split fixtures and from the small
# committed corpus under fuzz/corpus/ (copied: what a run finds stays in build/).
#   scripts/run-fuzzers.sh --runs N      libFuzzer (the `fuzz` preset): N inputs per target, or
#                                        20 s, whichever ends first (make fuzz-smoke)
#   scripts/run-fuzzers.sh --seconds S   libFuzzer: time budget per target (make fuzz)
#   scripts/run-fuzzers.sh --replay N    the dev build's replay executables: every seed and N
#                                        fixed variants of each, at most 15 s a target (make
#                                        test; fuzz/replay_main.cc)
# Crashes are written to build/<preset>/fuzz-crashes/<target>/ and make the script fail.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=(-runs=20000)
build=build/fuzz
suffix=
case "${1:-}" in
  --runs) mode=(-runs="$2" -max_total_time=20) ;;
  --seconds) mode=(-max_total_time="$2") ;;
  --replay) mode=(--variants="$2" --seconds=15); build=build/dev; suffix=_replay ;;
esac
fixtures="${FERRY_FIXTURES_DIR:-$(pwd)/$(head -n1 scripts/fixtures-dir.txt)}"  # docs/development.md

seed() {  # seed <corpus> <folder> <find predicate...>
  local corpus=$1 folder=$2; shift 2
  mkdir -p "$corpus"
  if [ -d "$folder" ]; then
    find "$folder" "$@" -size -200k -print0 | while IFS= read -r -d '' f; do
      cp -f "$f" "$corpus/$(md5sum < "$f" | cut -c1-16)"
    done
  fi
}

seed "$build/corpus/index_fuzzer" "$fixtures" -name index.json
seed "$build/corpus/mds_shard_reader_fuzzer" "$fixtures" -name '*.mds'
# The WebDataset fixtures sit beside the MDS ones.
seed "$build/corpus/tar_fuzzer" "$fixtures/../webdataset" -name '*.tar'
# Mosaic's split shards, framed as the target reads them: format byte, .meta length, .meta, data.
mkdir -p "$build/corpus/split_shard_fuzzer"
for meta in "$fixtures"/../split/*_plain/shard.0000[01].*.meta; do
  [ -f "$meta" ] || continue
  case "$meta" in *.json.meta) f=0 ;; *.csv.meta) f=1 ;; *) f=2 ;; esac
  n=$(stat -c %s "$meta")
  { printf "\\$(printf %03o "$f")\\$(printf %03o $((n % 256)))\\$(printf %03o $((n / 256)))"
    cat "$meta" "${meta%.meta}"; } > "$build/corpus/split_shard_fuzzer/$(basename "$meta")"
done
mkdir -p "$build/corpus/storage_fuzzer"
cp -f fuzz/corpus/storage_fuzzer/* "$build/corpus/storage_fuzzer/"

status=0
for target in index_fuzzer mds_shard_reader_fuzzer split_shard_fuzzer tar_fuzzer storage_fuzzer; do
  crashes="$build/fuzz-crashes/$target"
  mkdir -p "$crashes"
  log="$build/fuzz/$target.log"
  echo "fuzz: $target ${mode[*]} ($(ls "$build/corpus/$target" | wc -l) seeds)"
  if [ -n "$suffix" ]; then
    run=("$build/fuzz/ferry_$target$suffix" "${mode[@]}" --artifacts="$crashes")
  else
    run=("$build/fuzz/ferry_$target" "${mode[@]}" -max_len=262144 -timeout=10 -rss_limit_mb=2048
         -print_final_stats=0 -artifact_prefix="$crashes/")
  fi
  if ! timeout 900 "${run[@]}" "$build/corpus/$target" > "$log" 2>&1; then
    echo "fuzz: $target FAILED; see $log and $crashes/"
    tail -n 30 "$log"
    status=1
  else
    grep -E "^#[0-9]+.*DONE|^Done|^replay:" "$log" | tail -n 1 || true
  fi
done
exit $status
