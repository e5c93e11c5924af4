#!/usr/bin/env bash
# `ferry convert` of N synthetic JPEGs (~110 KB each) against `cp -r` of the same folder, in the
# same run, both from a warm page cache onto the same filesystem, in interleaved rounds. cp is the ceiling: it moves the
# same bytes with no encoding, hashing or shard assembly.
#   bench/convert_vs_cp.sh [--images N] [--repeat R]
set -euo pipefail
cd "$(dirname "$0")/.."

images=10000
repeat=5
while [ $# -gt 0 ]; do
  case "$1" in
    --images) images=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "usage: $0 [--images N] [--repeat R]" >&2; exit 2 ;;
  esac
done

bin=build/release
work=${FERRY_BENCH_DIR:-build/bench}
out_root=${FERRY_BENCH_OUT:-$work}  # where outputs go; e.g. /dev/shm takes the disk out of it
src=$work/images-$images
mkdir -p "$work" "$out_root"
if [ ! -f "$src.complete" ]; then
  rm -rf "$src"
  "$bin/bench/data/ferry-make-images" "$src" --count "$images" --classes 1000 --seed 7
  touch "$src.complete"
fi
bytes=$(du -sb "$src" | cut -f1)
find "$src" -type f -exec cat {} + > /dev/null  # warm the page cache

now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

once() {  # once <command...>: wall seconds, including the write-back of what it wrote
  rm -rf "$out_root/out"
  sync
  local t0; t0=$(now)
  "$@" > /dev/null || { echo "failed: $*" >&2; exit 1; }
  sync
  local t1; t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

# Interleaved rounds, so that a slow moment of the (shared) disk hits every command alike.
cp_runs=() raw_runs=() zstd_runs=()
for _ in $(seq "$repeat"); do
  cp_runs+=("$(once cp -r "$src" "$out_root/out")")
  raw_runs+=("$(once "$bin/src/cli/ferry" convert "$src" "$out_root/out" -q)")
  zstd_runs+=("$(once "$bin/src/cli/ferry" convert "$src" "$out_root/out" -q --compression zstd)")
done
rm -rf "$out_root/out"
cp_s=$(printf '%s\n' "${cp_runs[@]}" | median)
raw_s=$(printf '%s\n' "${raw_runs[@]}" | median)
zstd_s=$(printf '%s\n' "${zstd_runs[@]}" | median)

mbps() { awk -v b="$bytes" -v s="$1" 'BEGIN { printf "%.1f", b / 1e6 / s }'; }
fps() { awk -v n="$images" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }
ratio() { awk -v c="$cp_s" -v s="$1" 'BEGIN { printf "%.2f", c / s }'; }
echo "output under $out_root"
echo "convert vs cp: $images files, $((bytes / 1000000)) MB, median of $repeat interleaved rounds, $(nproc) cores"
echo "runs (s): cp ${cp_runs[*]} | convert ${raw_runs[*]} | convert zstd ${zstd_runs[*]}"
printf '| %-34s | %8s | %9s | %8s | %12s |\n' "command" "seconds" "files/s" "MB/s" "vs cp -r"
printf '|%s|%s|%s|%s|%s|\n' "------------------------------------" "----------" "-----------" "----------" "--------------"
printf '| %-34s | %8.2f | %9s | %8s | %12s |\n' "cp -r (ceiling)" "$cp_s" "$(fps "$cp_s")" "$(mbps "$cp_s")" "1.00"
printf '| %-34s | %8.2f | %9s | %8s | %12s |\n' "ferry convert (xxh64)" "$raw_s" "$(fps "$raw_s")" "$(mbps "$raw_s")" "$(ratio "$raw_s")"
printf '| %-34s | %8.2f | %9s | %8s | %12s |\n' "ferry convert --compression zstd" "$zstd_s" "$(fps "$zstd_s")" "$(mbps "$zstd_s")" "$(ratio "$zstd_s")"
