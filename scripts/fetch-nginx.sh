#!/usr/bin/env bash
# Unpacks Debian's nginx binary into build/tools/nginx for the benchmarks that serve shards from
# it (bench/cold_start_bench.sh --origin nginx): `apt-get download` and `dpkg-deb -x`, so that
# nothing is installed system-wide and no nginx service is started. Idempotent; prints the path
# of the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=build/tools/nginx
bin=$dest/usr/sbin/nginx
if [ ! -x "$bin" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download nginx > /dev/null 2>&1) || {
    apt-get update > /dev/null
    (cd "$tmp" && apt-get download nginx > /dev/null)
  }
  rm -rf "$dest"
  mkdir -p "$dest"
  dpkg-deb -x "$tmp"/nginx_*.deb "$dest"
fi
"$bin" -v 2>/dev/null || { echo "$0: $bin does not run" >&2; exit 1; }
echo "$bin"
