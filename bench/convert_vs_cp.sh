#!/usr/bin/env bash
# `ferry convert` of N synthetic JPEGs (~110 KB each) against `cp -r` of the same folder, in the
# same run, both from a warm page cache onto the same filesystem. cp is the ceiling: it moves the
# same bytes with no encoding, hashing or shard assembly.
#   bench/convert_vs_cp.sh [--images N] [--repeat R]
set -euo pipefail
cd "$(dirname "$0")/.."

images=10000
repeat=3
while [ $# -gt 0 ]; do
  case "$1" in
    --images) images=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "usage: $0 [--images N] [--repeat R]" >&2; exit 2 ;;
  esac
done

bin=build/release
work=${FERRY_BENCH_DIR:-build/bench}
src=$work/images-$images
mkdir -p "$work"
if [ ! -f "$src/.complete" ]; then
  rm -rf "$src"
  "$bin/bench/data/ferry-make-images" "$src" --count "$images" --classes 1000 --seed 7
  touch "$src/.complete"
fi
bytes=$(du -sb --exclude=.complete "$src" | cut -f1)
find "$src" -type f -exec cat {} + > /dev/null  # warm the page cache

now() { date +%s.%N; }
best() { sort -g | head -n 1; }

run() {  # run <label> <command...>: best wall time of $repeat runs
  local label=$1; shift
  local times=()
  for _ in $(seq "$repeat"); do
    rm -rf "$work/out"
    sync
    local t0; t0=$(now)
    "$@" > /dev/null
    sync  # count the write-back, as a real copy has to
    local t1; t1=$(now)
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
  done
  printf '%s\n' "${times[@]}" | best
}

cp_s=$(run "cp -r" cp -r "$src" "$work/out")
raw_s=$(run "ferry convert" "$bin/src/cli/ferry" convert "$src" "$work/out" -q)
zstd_s=$(run "ferry convert --compression zstd" "$bin/src/cli/ferry" convert "$src" "$work/out" -q --compression zstd)
rm -rf "$work/out"

mbps() { awk -v b="$bytes" -v s="$1" 'BEGIN { printf "%.1f", b / 1e6 / s }'; }
fps() { awk -v n="$images" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }
ratio() { awk -v c="$cp_s" -v s="$1" 'BEGIN { printf "%.2f", c / s }'; }
echo "convert vs cp: $images files, $((bytes / 1000000)) MB, best of $repeat, $(nproc) cores"
printf '| %-34s | %8s | %9s | %8s | %12s |\n' "command" "seconds" "files/s" "MB/s" "vs cp -r"
printf '|%s|%s|%s|%s|%s|\n' "------------------------------------" "----------" "-----------" "----------" "--------------"
printf '| %-34s | %8.2f | %9s | %8s | %12s |\n' "cp -r (ceiling)" "$cp_s" "$(fps "$cp_s")" "$(mbps "$cp_s")" "1.00"
printf '| %-34s | %8.2f | %9s | %8s | %12s |\n' "ferry convert (xxh64)" "$raw_s" "$(fps "$raw_s")" "$(mbps "$raw_s")" "$(ratio "$raw_s")"
printf '| %-34s | %8.2f | %9s | %8s | %12s |\n' "ferry convert --compression zstd" "$zstd_s" "$(fps "$zstd_s")" "$(mbps "$zstd_s")" "$(ratio "$zstd_s")"
