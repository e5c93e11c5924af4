# shellcheck shell=bash
# Sourced by the bench scripts (from the repository root): the 10,000 synthetic JPEGs and their
# MDS datasets, made once and kept under $work (build/bench), made with the tools of $bin
# (build/release); both set here.
#   bench_mds SIZE          makes $work/mds-SIZE (64 MB or 256 MB shards, say) if missing
#   upload_bench_mds SIZE   ... and copies it to s3://$bucket/SIZE (after s3rver_env.sh)
#   bench_mds_bytes         makes $work/mds-64mb-bytes if missing: the JPEGs as a `bytes`
#                           column (nothing decoded by any reader) and their class as `label`
#   start_wan RTT_MS TOTAL_MBPS [PORT]   ferry-wan in front of s3rver (or of 127.0.0.1:PORT; its
#                                 PID in wan_pid, which s3rver_env.sh's exit stops); points
#                                 AWS_ENDPOINT_URL at it
#   start_nginx ROOT              nginx (Debian's, scripts/fetch-nginx.sh) serving the files under
#                                 ROOT on a free loopback port, nginx_port (PID in nginx_pid)
bin=build/release
work=build/bench

bench_images() {
  local src=$work/images-10000
  if [ ! -f "$src.complete" ]; then
    rm -rf "$src"
    "$bin/bench/data/ferry-make-images" "$src" --count 10000 --classes 1000 --seed 7
    touch "$src.complete"
  fi
}

bench_mds() {
  local ds=$work/mds-$1
  bench_images
  # Made again when missing, or kept from before convert named its column `data`.
  if [ ! -f "$ds/index.json" ] || ! grep -q '"data"' "$ds/index.json"; then
    "$bin/src/cli/ferry" convert "$work/images-10000" "$ds" -q --size-limit "$1" --overwrite \
      > /dev/null
  fi
}

bench_mds_bytes() {
  local ds=$work/mds-64mb-bytes
  bench_images
  [ -f "$ds/index.json" ] && return
  PYTHONPATH=$bin/python /usr/bin/python3 - "$work/images-10000" "$ds" <<'PY'
import pathlib, sys
import ferry
src, out = pathlib.Path(sys.argv[1]), sys.argv[2]
classes = sorted(p.name for p in src.iterdir() if p.is_dir())
with ferry.MDSWriter(out=out, columns={"data": "bytes", "label": "int"},
                     size_limit="64mb") as writer:
    for label, name in enumerate(classes):
        for f in sorted((src / name).iterdir()):
            writer.write({"data": f.read_bytes(), "label": label})
PY
}

upload_bench_mds() {
  bench_mds "$1"
  "$bin/src/cli/ferry" cp -r -q --jobs 8 "$work/mds-$1" "s3://$bucket/$1" > /dev/null
}

start_wan() {
  local half
  half=$(awk -v r="$1" 'BEGIN { print r / 2 }')
  rm -f "$work/wan.port"
  "$bin/bench/ferry-wan" --target "127.0.0.1:${3:-$s3_port}" --delay-ms "$half" --total-mbps "$2" \
    --port-file "$work/wan.port" > "$work/wan.log" 2>&1 &
  wan_pid=$!
  for _ in $(seq 100); do [ -s "$work/wan.port" ] && break; sleep 0.05; done
  export AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$work/wan.port")
}

start_nginx() {
  local nginx prefix
  nginx=$(scripts/fetch-nginx.sh | tail -n 1)
  prefix=$(realpath "$work")/nginx
  rm -rf "$prefix" && mkdir -p "$prefix/tmp"
  nginx_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # Static files with ranges, etags and sendfile: what a CDN or a plain HTTP origin serves.
  cat > "$prefix/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $prefix/nginx.pid;
error_log $prefix/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  client_body_temp_path $prefix/tmp;
  proxy_temp_path $prefix/tmp;
  fastcgi_temp_path $prefix/tmp;
  uwsgi_temp_path $prefix/tmp;
  scgi_temp_path $prefix/tmp;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$nginx_port;
    root $(realpath "$1");
  }
}
CONF
  "$nginx" -p "$prefix" -c "$prefix/nginx.conf" &
  nginx_pid=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$nginx_port/" && return 0
    sleep 0.05
  done
  echo "nginx did not start: $(cat "$prefix/error.log")" >&2
  return 1
}
