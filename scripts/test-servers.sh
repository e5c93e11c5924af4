#!/usr/bin/env bash
# Starts, stops and describes the object-store emulators that ferry's integration tests and
# benchmarks talk to, all on 127.0.0.1 only, on ports the OS picks:
#   moto       moto's S3 server, authentication off: any access key and secret are accepted.
#   moto-auth  a second moto in auth mode: it checks SigV4 signatures and only accepts the key
#              pair provision.py made in its IAM (a wrong secret -> 403 SignatureDoesNotMatch,
#              an unknown key id -> 403 InvalidAccessKeyId). Used for wrong-credential tests.
#   s3rver     s3rver (npm): fast, keeps objects on disk; access key id must be S3RVER (anything
#              else -> 403 InvalidAccessKeyId) but SigV4 signatures are not checked.
#   azurite    Azurite's blob service (npm): SharedKey and SAS are checked (wrong key -> 403).
#   azurite-oauth  a second Azurite over HTTPS (a throwaway self-signed certificate made at start)
#              with OAuth on (--oauth basic): it also accepts Entra ID bearer tokens (issuer,
#              audience and expiry checked, not the signature). Blobs in memory.
#   identity   tests/servers/identity_server.py: the EC2 instance metadata (IMDSv2), container
#              credential, Entra ID token, Azure managed identity, Google token and metadata
#              server endpoints, issuing
#              credentials and tokens of 6 s life (no store behind them).
#   databricks tests/servers/databricks_server.py: a Databricks workspace's Files API 2.0 over
#              Unity Catalog volumes held in memory (/Volumes/ferry/test/data, and
#              /Volumes/ferry/test/readonly that refuses writes), with a personal access token
#              and OAuth machine-to-machine tokens of 6 s life.
#
# Usage: scripts/test-servers.sh COMMAND [NAME] [--state DIR] [options]
#   start              install the npm servers if needed (npm ci), start them all, wait until
#                      each answers, create the bucket/container, write STATE/env, print the
#                      variables (export lines) on stdout; progress goes to stderr, so
#                      `eval "$(scripts/test-servers.sh start)"` works. Already running: prints.
#     --quiet          no per-request access logs from s3rver and Azurite (for benchmarks)
#     --azurite-in-memory   Azurite keeps blobs in memory (for benchmarks; lost on restart)
#   stop               stop them all (TERM, then KILL), delete their data and STATE/env. Idempotent.
#   stop NAME          stop one server but keep its port and data, so `start NAME` brings it back.
#   start NAME         start a stopped server again on its recorded port with its data folder.
#   restart NAME [--down SECONDS]   stop NAME, stay down SECONDS (default 0), start it again on
#                      the same port and data folder (for tests that lose a server mid-transfer).
#   status             one line per server; exit status 0 only when all are running.
#   env [--plain]      print the variables: `export NAME='value'` lines for
#                      `source <(scripts/test-servers.sh env)`, or with --plain the STATE/env file
#                      itself (NAME=value, value unquoted: split at the first '=').
#   --state DIR        state folder (default: $FERRY_TEST_SERVERS_STATE, else build/test-servers
#                      in the repository). Holds NAME.pid, NAME.port, NAME.log, data/NAME/, env.
#
# Variables (in STATE/env and printed by `env`):
#   FERRY_TEST_SERVERS_STATE          the state folder (the interop clients find STATE/env there)
#   FERRY_TEST_REGION                 region to sign S3 requests for: us-east-1
#   FERRY_TEST_S3RVER_ENDPOINT        http://127.0.0.1:PORT of s3rver (use path-style addressing)
#   FERRY_TEST_S3RVER_BUCKET          bucket created for tests: ferry-test
#   FERRY_TEST_S3RVER_ACCESS_KEY      S3RVER (the only key id s3rver knows)
#   FERRY_TEST_S3RVER_SECRET_KEY      S3RVER (not checked by s3rver for SigV4)
#   FERRY_TEST_MOTO_ENDPOINT          http://127.0.0.1:PORT of moto without authentication
#   FERRY_TEST_MOTO_BUCKET            ferry-test
#   FERRY_TEST_MOTO_ACCESS_KEY        testing (any value works: moto checks nothing here)
#   FERRY_TEST_MOTO_SECRET_KEY        testing
#   FERRY_TEST_MOTO_AUTH_ENDPOINT     http://127.0.0.1:PORT of moto in auth mode
#   FERRY_TEST_MOTO_AUTH_BUCKET       ferry-test
#   FERRY_TEST_MOTO_AUTH_ACCESS_KEY   access key id of IAM user ferry-test (s3:* allowed)
#   FERRY_TEST_MOTO_AUTH_SECRET_KEY   its secret; any other secret gets 403 SignatureDoesNotMatch
#   FERRY_TEST_AZURITE_ENDPOINT       http://127.0.0.1:PORT/devstoreaccount1 (blob service URL)
#   FERRY_TEST_AZURITE_ACCOUNT        devstoreaccount1
#   FERRY_TEST_AZURITE_KEY            the account's well-known base64 SharedKey
#   FERRY_TEST_AZURITE_CONTAINER      container created for tests: ferry-test
#   FERRY_TEST_IDENTITY_ENDPOINT      http://127.0.0.1:PORT of the identity server (IMDS paths at
#                                     its root, container credentials at /container/credentials)
#   FERRY_TEST_IDENTITY_CONTAINER_TOKEN  the Authorization value its container endpoint demands
#   FERRY_TEST_AZURITE_CONNECTION_STRING  DefaultEndpointsProtocol=http;AccountName=...;
#                                     AccountKey=...;BlobEndpoint=<endpoint>;
#   FERRY_TEST_AZURITE_OAUTH_ENDPOINT https://127.0.0.1:PORT/devstoreaccount1 (same account, key
#                                     and container as azurite)
#   FERRY_TEST_AZURITE_OAUTH_CA       its certificate (PEM), for FERRY_CA_BUNDLE / verify=
#   FERRY_TEST_AZURE_TENANT, FERRY_TEST_AZURE_CLIENT_ID   the identity server's one tenant and
#                                     application (also the managed identity's client id)
#   FERRY_TEST_AZURE_CLIENT_SECRET    the application's secret (random per start)
#   FERRY_TEST_AZURE_CLIENT_CERTIFICATE  PEM key + certificate registered for the application
#   FERRY_TEST_AZURE_FEDERATED_TOKEN  the token the application trusts as a federated assertion
#   FERRY_TEST_AZURE_IDENTITY_HEADER  App Service's IDENTITY_HEADER value (at /msi/token)
#   FERRY_TEST_GOOGLE_KEY             a service account key file whose token_uri is the identity
#                                     server's /google/token (the key is made at start)
#   FERRY_TEST_GOOGLE_USER            a user credentials file (authorized_user) for the same
#   FERRY_TEST_GOOGLE_SUBJECT_TOKEN   the token its workload identity federation accepts
#   FERRY_TEST_DATABRICKS_HOST        http://127.0.0.1:PORT of the Databricks workspace
#   FERRY_TEST_DATABRICKS_VOLUME      /Volumes/ferry/test/data (read and write)
#   FERRY_TEST_DATABRICKS_READONLY_VOLUME  /Volumes/ferry/test/readonly (writes get 403)
#   FERRY_TEST_DATABRICKS_TOKEN       its personal access token (random per start)
#   FERRY_TEST_DATABRICKS_CLIENT_ID, FERRY_TEST_DATABRICKS_CLIENT_SECRET   its service principal
#
# Notes: moto keeps objects in memory, so after a restart its bucket is back but empty (moto-auth's
# key pair stays the same: provision.py seeds moto's generator). s3rver and Azurite on disk keep
# their objects across a restart (Azurite with --azurite-in-memory does not).
# moto-auth's own signature check is wrong whenever the request's query or key carries a character
# that moto un-escapes before checking (moto issue #5948): a correctly signed request then gets 403
# SignatureDoesNotMatch. Seen with '/' ':' ',' '@' '(' ')' '*' '!' '$' ';' in a query value
# (prefix=dir/, delimiter=/, start-after=a/b) and '+' ':' in a key ('/' in a key is fine; moto's
# continuation tokens are hex, so paging works). So use moto-auth for credential checks on plain
# keys (GET/HEAD/PUT/DELETE, multipart, listing without such a prefix), the rest on moto or s3rver.
# Unsigned requests and presigned URLs get 403 or 500 from moto-auth.
# To kill a server mid-transfer, use objects far larger than the socket buffers (tens of MB):
# a few MB already sit in the kernel and still arrive after the process is gone.
# Servers run in the background after this script exits; their logs are STATE/NAME.log.
# Override interpreters with FERRY_MOTO_PYTHON (one that imports moto) and FERRY_TEST_PYTHON
# (Debian's, with boto3 and azure-storage-blob; default /usr/bin/python3).
set -euo pipefail

readonly SERVERS=(moto moto-auth s3rver azurite azurite-oauth identity databricks)
readonly HOST=127.0.0.1
readonly READY_TIMEOUT_S=30      # all servers together; moto is the slowest (~2 s on 2 cores)
readonly STOP_TERM_WAIT_S=5      # then SIGKILL
readonly NPM_CI_TIMEOUT_S=600
readonly BUCKET=ferry-test
readonly AZURITE_ACCOUNT=devstoreaccount1
readonly IDENTITY_CONTAINER_TOKEN=ferry-container-token  # what the container endpoint demands
readonly AZURE_TENANT=ferry-tenant AZURE_CLIENT_ID=ferry-client
readonly DATABRICKS_CLIENT_ID=ferry-sp DATABRICKS_VOLUME=ferry/test/data
readonly DATABRICKS_READONLY_VOLUME=ferry/test/readonly
# Azurite's published development key (see Microsoft's Azurite docs, "well-known storage
# account and key").
readonly AZURITE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

prog=test-servers
say() { echo "$prog: $*" >&2; }
die() { say "error: $*"; exit 1; }

# ---- arguments -------------------------------------------------------------------------------
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
cmd=${1:-}
case "$cmd" in
  "") usage >&2; exit 2 ;;
  -h|--help|help) usage; exit 0 ;;
esac
shift
name="" state="" quiet=0 in_memory=0 plain=0 down_s=0
while [ $# -gt 0 ]; do
  case "$1" in
    --state) [ $# -ge 2 ] || die "--state needs a folder"; state=$2; shift 2 ;;
    --state=*) state=${1#*=}; shift ;;
    --quiet) quiet=1; shift ;;
    --azurite-in-memory) in_memory=1; shift ;;
    --plain) plain=1; shift ;;
    --down) [ $# -ge 2 ] || die "--down needs seconds"; down_s=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) [ -z "$name" ] || die "one server name at most (got $name and $1)"; name=$1; shift ;;
  esac
done
if [ -n "$name" ]; then
  case " ${SERVERS[*]} " in
    *" $name "*) ;;
    *) die "unknown server '$name' (known: ${SERVERS[*]})" ;;
  esac
fi
[[ "$down_s" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--down takes seconds, not '$down_s'"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${state:-${FERRY_TEST_SERVERS_STATE:-$repo/build/test-servers}}
mkdir -p "$state"
state=$(cd "$state" && pwd)  # absolute, resolved against the caller's cwd before we cd away
cd "$repo"

test_python=${FERRY_TEST_PYTHON:-/usr/bin/python3}

# ---- small helpers ---------------------------------------------------------------------------
now_us() { local t=$EPOCHREALTIME; echo "${t/[.,]/}"; }
elapsed() {  # START_US -> "1.2s"
  local us=$(( $(now_us) - $1 ))
  printf '%d.%01ds' $((us / 1000000)) $((us % 1000000 / 100000))
}

port_of() { cat "$state/$1.port" 2>/dev/null || true; }
log_of() { echo "$state/$1.log"; }

# Field 22 of /proc/PID/stat (start time) and field 3 (state). The PID file holds "PID STARTTIME"
# so that a PID the kernel has since given to another process is never signalled.
proc_field() {  # PID FIELD
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # drop "pid (comm) ": comm may contain spaces
  local -a f
  read -r -a f <<< "$stat"
  case "$2" in state) echo "${f[0]}" ;; start) echo "${f[19]}" ;; esac
}

pid_of() { local p _; [ -f "$state/$1.pid" ] && read -r p _ < "$state/$1.pid" && echo "$p"; }

is_running() {  # NAME: the recorded process exists, is the one we started, and is not a zombie
  local pid start st
  [ -f "$state/$1.pid" ] || return 1
  read -r pid start < "$state/$1.pid" || return 1
  st=$(proc_field "$pid" state) || return 1
  [ "$st" != Z ] && [ "$(proc_field "$pid" start)" = "$start" ]
}

answers() {  # NAME: any HTTP answer on its port counts (Azurite answers GET / with 400)
  # moto: its own API page, because moto-auth answers an unsigned GET / with a 500 and a
  # traceback in its log.
  local path=/
  local scheme=http
  case "$1" in moto|moto-auth) path=/moto-api/ ;; identity|databricks) path=/_stats ;; azurite-oauth) scheme=https ;; esac
  curl -s -k -o /dev/null --max-time 1 "$scheme://$HOST:$(port_of "$1")$path"
}

log_tail() {
  local log; log=$(log_of "$1")
  [ -s "$log" ] || { say "  ($1: empty log)"; return 0; }
  say "last lines of $log:"
  tail -n 25 "$log" | sed "s/^/  $1| /" >&2
}

lock_state() {
  # Serializes commands that change servers (parallel test fixtures may call restart). The
  # servers must not inherit fd 9, or they would hold the lock for as long as they run.
  exec 9>"$state/.lock"
  flock -w 60 9 || die "another $prog command holds $state/.lock for over 60 s"
}

# ---- prerequisites ---------------------------------------------------------------------------
ensure_node_modules() {  # [keep]: with "keep", never reinstall under servers that may be running
  # npm writes node_modules/.package-lock.json on install: older than package-lock.json means
  # the lock changed (e.g. a checkout) since the last install.
  command -v node >/dev/null || die "node is not on PATH (scripts/install-deps.sh installs it)"
  if [ ! -f node_modules/.package-lock.json ] ||
     { [ "${1:-}" != keep ] && [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
    say "installing s3rver and Azurite from package-lock.json (npm ci, ~15 s)"
    command -v npm >/dev/null || die "npm is not on PATH"
    timeout "$NPM_CI_TIMEOUT_S" npm ci --no-audit --no-fund --loglevel=error >&2 \
      || die "npm ci failed (needs the npm registry; see above)"
  fi
  if [ ! -f node_modules/s3rver/bin/s3rver.js ] ||
     [ ! -f node_modules/azurite/dist/src/blob/main.js ]; then
    die "node_modules lacks s3rver or azurite: delete node_modules and run again"
  fi
}

moto_python=""
find_moto_python() {
  # moto lives in the image's pyenv Python, not in Debian's: take the first interpreter that
  # imports moto's server, and run its real executable so that $! is the server's PID.
  [ -n "$moto_python" ] && return 0
  local candidates=() c exe
  [ -n "${FERRY_MOTO_PYTHON:-}" ] && candidates+=("$FERRY_MOTO_PYTHON")
  command -v python3 >/dev/null && candidates+=("$(command -v python3)")
  command -v pyenv >/dev/null && c=$(pyenv which python3 2>/dev/null) && candidates+=("$c")
  for c in "$HOME"/.pyenv/versions/*/bin/python3 /root/.pyenv/versions/*/bin/python3 \
           /usr/bin/python3; do
    [ -x "$c" ] && candidates+=("$c")
  done
  for c in "${candidates[@]}"; do
    if exe=$(timeout 30 "$c" -c 'import sys, moto.server; print(sys.executable)' 2>/dev/null); then
      moto_python=$exe
      return 0
    fi
  done
  die "no Python with moto found (tried: ${candidates[*]});" \
      "set FERRY_MOTO_PYTHON to an interpreter that has moto 5"
}

free_ports() {  # COUNT: ports the OS hands out, held open together so they are distinct
  "$test_python" -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

# The HTTPS Azurite's certificate, for 127.0.0.1, made once per state folder (a restart keeps it).
tls_certificate() {
  [ -f "$state/azurite-oauth.crt" ] && [ -f "$state/azurite-oauth.key" ] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$state/azurite-oauth.key.tmp" \
    -out "$state/azurite-oauth.crt.tmp" >/dev/null 2>&1 || die "openssl could not make a certificate"
  mv "$state/azurite-oauth.key.tmp" "$state/azurite-oauth.key"
  mv "$state/azurite-oauth.crt.tmp" "$state/azurite-oauth.crt"
}

# The identity and Databricks servers' secrets: random per full start, kept across a restart.
# They reach the servers through this file, never a command line (which the log and `ps` show).
# Letters and digits only: a value starting with "-" would read as an option wherever one is
# passed on.
AZURE_CLIENT_SECRET="" AZURE_FEDERATED_TOKEN="" AZURE_IDENTITY_HEADER="" GOOGLE_SUBJECT_TOKEN=""
DATABRICKS_TOKEN="" DATABRICKS_CLIENT_SECRET=""
server_secrets() {
  if [ ! -f "$state/secrets" ]; then
    local name value
    for name in azure_client_secret azure_federated_token azure_identity_header \
                google_subject_token databricks_token databricks_client_secret; do
      value=$(head -c 48 /dev/urandom | base64 -w0 | tr -d '+/=' | cut -c1-32)
      echo "$name=$value"
    done > "$state/secrets.tmp"
    chmod 600 "$state/secrets.tmp"
    mv "$state/secrets.tmp" "$state/secrets"
  fi
  local line
  while IFS= read -r line; do
    case "$line" in
      azure_client_secret=*) AZURE_CLIENT_SECRET=${line#*=} ;;
      azure_federated_token=*) AZURE_FEDERATED_TOKEN=${line#*=} ;;
      azure_identity_header=*) AZURE_IDENTITY_HEADER=${line#*=} ;;
      google_subject_token=*) GOOGLE_SUBJECT_TOKEN=${line#*=} ;;
      databricks_token=*) DATABRICKS_TOKEN=${line#*=} ;;
      databricks_client_secret=*) DATABRICKS_CLIENT_SECRET=${line#*=} ;;
    esac
  done < "$state/secrets"
  [ -n "$AZURE_CLIENT_SECRET" ] && [ -n "$DATABRICKS_CLIENT_SECRET" ] ||
    die "$state/secrets is incomplete; stop the servers and start them again"
}

# ---- one server ------------------------------------------------------------------------------
launch() {  # NAME: start it in the background on its recorded port; record "PID STARTTIME"
  local n=$1 port data log pid cmdline=()
  port=$(port_of "$n"); data="$state/data/$n"; log=$(log_of "$n")
  local opts_quiet=0 opts_mem=0
  [ -f "$state/options" ] && read -r opts_quiet opts_mem < "$state/options"
  case "$n" in
    moto|moto-auth)
      find_moto_python
      # INITIAL_NO_AUTH_ACTION_COUNT unset = auth off; provision.py turns moto-auth's on after
      # creating its IAM key (POST /moto-api/reset-auth), so both start the same way.
      cmdline=(env -u INITIAL_NO_AUTH_ACTION_COUNT
               "$moto_python" -m moto.server -H "$HOST" -p "$port") ;;
    s3rver)
      # --openssl-legacy-provider: without it s3rver's listings over 1000 keys fail on Node 17+.
      mkdir -p "$data"
      cmdline=(node --openssl-legacy-provider node_modules/s3rver/bin/s3rver.js
               -d "$data" -a "$HOST" -p "$port")
      [ "$opts_quiet" = 1 ] && cmdline+=(--silent) ;;
    azurite)
      cmdline=(node node_modules/azurite/dist/src/blob/main.js --blobHost "$HOST" --blobPort "$port"
               --skipApiVersionCheck --loose --disableTelemetry)
      # Azurite refuses --location together with --inMemoryPersistence.
      if [ "$opts_mem" = 1 ]; then
        cmdline+=(--inMemoryPersistence)
      else
        mkdir -p "$data"
        cmdline+=(--location "$data")
      fi
      [ "$opts_quiet" = 1 ] && cmdline+=(--silent) ;;
    azurite-oauth)
      tls_certificate
      cmdline=(node node_modules/azurite/dist/src/blob/main.js --blobHost "$HOST" --blobPort "$port"
               --skipApiVersionCheck --loose --disableTelemetry --inMemoryPersistence
               --oauth basic --cert "$state/azurite-oauth.crt" --key "$state/azurite-oauth.key")
      [ "$opts_quiet" = 1 ] && cmdline+=(--silent) ;;
    identity)
      server_secrets
      cmdline=("$test_python" tests/servers/identity_server.py --port "$port" --life 6
               --container-token "$IDENTITY_CONTAINER_TOKEN" --azure-tenant "$AZURE_TENANT"
               --azure-client-id "$AZURE_CLIENT_ID" --secrets "$state/secrets"
               --azure-certificate "$state/azure-client.pem"
               --google-key "$state/google-key.json" --google-user "$state/google-user.json") ;;
    databricks)
      server_secrets
      cmdline=("$test_python" tests/servers/databricks_server.py --port "$port" --life 6
               --client-id "$DATABRICKS_CLIENT_ID" --secrets "$state/secrets"
               --volume "$DATABRICKS_VOLUME" --read-only-volume "$DATABRICKS_READONLY_VOLUME") ;;
  esac
  echo "=== $(date '+%F %T') $prog: ${cmdline[*]}" >> "$log"
  # stdin/stdout/stderr away from the caller: a test capturing our output must not wait for
  # the servers to exit. Without job control, background jobs also ignore the caller's Ctrl-C.
  "${cmdline[@]}" < /dev/null >> "$log" 2>&1 9>&- &
  pid=$!
  echo "$pid $(proc_field "$pid" start)" > "$state/$n.pid"
  started_now+=("$n")
}

show_log_on_failure=1
wait_ready() {  # NAME...: until each answers HTTP; fail at once when one exits
  local deadline=$(( $(now_us) + READY_TIMEOUT_S * 1000000 )) pending=("$@") left n
  while [ ${#pending[@]} -gt 0 ]; do
    left=()
    for n in "${pending[@]}"; do
      if answers "$n"; then continue; fi
      if ! is_running "$n"; then
        say "$n exited while starting (port $(port_of "$n"))"
        [ "$show_log_on_failure" = 1 ] && log_tail "$n"
        return 1
      fi
      left+=("$n")
    done
    pending=(${left[@]+"${left[@]}"})
    [ ${#pending[@]} -eq 0 ] && break
    if [ "$(now_us)" -ge "$deadline" ]; then
      say "not answering after ${READY_TIMEOUT_S}s: ${pending[*]}"
      for n in "${pending[@]}"; do log_tail "$n"; done
      return 1
    fi
    sleep 0.2
  done
}

stop_one() {  # NAME: TERM, bounded wait, KILL; forget the PID. Returns 0 also when not running.
  local n=$1 pid i
  pid=$(pid_of "$n") || true
  if [ -n "$pid" ] && is_running "$n"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < STOP_TERM_WAIT_S * 10; i++)); do is_running "$n" || break; sleep 0.1; done
    if is_running "$n"; then
      say "$n (pid $pid) ignored SIGTERM for ${STOP_TERM_WAIT_S}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 20; i++)); do is_running "$n" || break; sleep 0.1; done
    fi
    wait "$pid" 2>/dev/null || true  # reap it when it was started by this very invocation
    say "stopped $n (pid $pid)"
  fi
  rm -f "$state/$n.pid"
}

provision() {  # NAME...: bucket/container; moto-auth's IAM key goes to STATE/moto-auth.keys
  local out stores=() n
  for n in "$@"; do  # the identity and Databricks servers need nothing
    case "$n" in identity|databricks) ;; *) stores+=("$n") ;; esac
  done
  [ ${#stores[@]} -gt 0 ] || return 0
  # The env file only: variables of another server set exported in the caller's shell would win.
  local clean=() v
  for v in $(compgen -e | grep '^FERRY_TEST_' || true); do clean+=(-u "$v"); done
  out=$(timeout 60 env ${clean[@]+"${clean[@]}"} "$test_python" tests/interop/provision.py \
          --env-file "$state/env" "${stores[@]}") \
    || { say "could not set up $* (does $test_python have boto3 and azure-storage-blob?" \
             "scripts/install-deps.sh installs them)"; return 1; }
  if [ -n "$out" ]; then
    echo "$out" > "$state/moto-auth.keys.tmp"
    mv "$state/moto-auth.keys.tmp" "$state/moto-auth.keys"
  fi
}

write_env() {
  local ak="" sk="" line
  if [ -f "$state/moto-auth.keys" ]; then
    while IFS= read -r line; do
      case "$line" in
        FERRY_TEST_MOTO_AUTH_ACCESS_KEY=*) ak=${line#*=} ;;
        FERRY_TEST_MOTO_AUTH_SECRET_KEY=*) sk=${line#*=} ;;
      esac
    done < "$state/moto-auth.keys"
  fi
  local azurite_ep cs
  server_secrets
  azurite_ep="http://$HOST:$(port_of azurite)/$AZURITE_ACCOUNT"
  cs="DefaultEndpointsProtocol=http;AccountName=$AZURITE_ACCOUNT;AccountKey=$AZURITE_KEY;"
  cs+="BlobEndpoint=$azurite_ep;"
  cat > "$state/env.tmp" <<EOF
FERRY_TEST_SERVERS_STATE=$state
FERRY_TEST_REGION=us-east-1
FERRY_TEST_S3RVER_ENDPOINT=http://$HOST:$(port_of s3rver)
FERRY_TEST_S3RVER_BUCKET=$BUCKET
FERRY_TEST_S3RVER_ACCESS_KEY=S3RVER
FERRY_TEST_S3RVER_SECRET_KEY=S3RVER
FERRY_TEST_MOTO_ENDPOINT=http://$HOST:$(port_of moto)
FERRY_TEST_IDENTITY_ENDPOINT=http://$HOST:$(port_of identity)
FERRY_TEST_IDENTITY_CONTAINER_TOKEN=$IDENTITY_CONTAINER_TOKEN
FERRY_TEST_MOTO_BUCKET=$BUCKET
FERRY_TEST_MOTO_ACCESS_KEY=testing
FERRY_TEST_MOTO_SECRET_KEY=testing
FERRY_TEST_MOTO_AUTH_ENDPOINT=http://$HOST:$(port_of moto-auth)
FERRY_TEST_MOTO_AUTH_BUCKET=$BUCKET
FERRY_TEST_MOTO_AUTH_ACCESS_KEY=$ak
FERRY_TEST_MOTO_AUTH_SECRET_KEY=$sk
FERRY_TEST_AZURITE_ENDPOINT=$azurite_ep
FERRY_TEST_AZURITE_ACCOUNT=$AZURITE_ACCOUNT
FERRY_TEST_AZURITE_KEY=$AZURITE_KEY
FERRY_TEST_AZURITE_CONTAINER=$BUCKET
FERRY_TEST_AZURITE_CONNECTION_STRING=$cs
FERRY_TEST_AZURITE_OAUTH_ENDPOINT=https://$HOST:$(port_of azurite-oauth)/$AZURITE_ACCOUNT
FERRY_TEST_AZURITE_OAUTH_CA=$state/azurite-oauth.crt
FERRY_TEST_AZURE_TENANT=$AZURE_TENANT
FERRY_TEST_AZURE_CLIENT_ID=$AZURE_CLIENT_ID
FERRY_TEST_AZURE_CLIENT_SECRET=$AZURE_CLIENT_SECRET
FERRY_TEST_AZURE_CLIENT_CERTIFICATE=$state/azure-client.pem
FERRY_TEST_AZURE_FEDERATED_TOKEN=$AZURE_FEDERATED_TOKEN
FERRY_TEST_AZURE_IDENTITY_HEADER=$AZURE_IDENTITY_HEADER
FERRY_TEST_GOOGLE_KEY=$state/google-key.json
FERRY_TEST_GOOGLE_USER=$state/google-user.json
FERRY_TEST_GOOGLE_SUBJECT_TOKEN=$GOOGLE_SUBJECT_TOKEN
FERRY_TEST_DATABRICKS_HOST=http://$HOST:$(port_of databricks)
FERRY_TEST_DATABRICKS_VOLUME=/Volumes/$DATABRICKS_VOLUME
FERRY_TEST_DATABRICKS_READONLY_VOLUME=/Volumes/$DATABRICKS_READONLY_VOLUME
FERRY_TEST_DATABRICKS_TOKEN=$DATABRICKS_TOKEN
FERRY_TEST_DATABRICKS_CLIENT_ID=$DATABRICKS_CLIENT_ID
FERRY_TEST_DATABRICKS_CLIENT_SECRET=$DATABRICKS_CLIENT_SECRET
EOF
  mv "$state/env.tmp" "$state/env"
}

print_env() {
  [ -f "$state/env" ] || die "no $state/env: the servers are not started ($0 start)"
  if [ "$plain" = 1 ]; then cat "$state/env"; return; fi
  local line
  while IFS= read -r line; do
    # Single quotes keep the connection string's ';' and the key's '/', '=' intact.
    printf "export %s='%s'\n" "${line%%=*}" "${line#*=}"
  done < "$state/env"
}

# On any failure while starting, stop exactly what this invocation started and say why.
started_now=() full_start=0
forget_all() {
  rm -rf "$state/data"
  rm -f "$state"/*.pid "$state"/*.port "$state/env" "$state/moto-auth.keys" "$state/options" \
    "$state/secrets" "$state/azure-client.pem" "$state"/google-{key,user}.json \
    "$state"/azurite-oauth.{crt,key}
}
on_exit() {
  local rc=$?
  if [ $rc -ne 0 ] && [ ${#started_now[@]} -gt 0 ]; then
    say "start failed: stopping ${started_now[*]}"
    local n
    for n in "${started_now[@]}"; do stop_one "$n"; done
    # A failed full start leaves no half state behind, only the logs.
    [ "$full_start" = 1 ] && forget_all
  fi
  exit $rc
}
trap on_exit EXIT

start_one() {  # NAME: a stopped server comes back on its recorded port with its data folder
  local n=$1 t0 attempt
  [ -n "$(port_of "$n")" ] || die "$n has no recorded port in $state: run '$0 start' first"
  is_running "$n" && { say "$n is already running (pid $(pid_of "$n"))"; return 0; }
  case "$n" in s3rver|azurite*) ensure_node_modules keep ;; esac
  t0=$(now_us)
  # The old socket may linger a moment; the servers set SO_REUSEADDR, but retry a bind failure.
  for attempt in 1 2 3; do
    launch "$n"
    show_log_on_failure=$(( attempt == 3 ))
    if wait_ready "$n"; then break; fi
    if [ $attempt -eq 3 ] || ! tail -n 30 "$(log_of "$n")" | grep -q EADDRINUSE; then
      [ $attempt -eq 3 ] || log_tail "$n"
      exit 1
    fi
    say "$n: port $(port_of "$n") still busy, retrying"
    stop_one "$n"; started_now=(); sleep 0.5
  done
  provision "$n"
  write_env
  started_now=()
  say "$n is back on port $(port_of "$n") (pid $(pid_of "$n")) after $(elapsed "$t0")"
}

# ---- commands --------------------------------------------------------------------------------
cmd_start_all() {
  local n running=() ports t0
  for n in "${SERVERS[@]}"; do is_running "$n" && running+=("$n"); done
  if [ ${#running[@]} -eq ${#SERVERS[@]} ] && [ -f "$state/env" ]; then
    say "already running (state $state)"
    print_env
    return 0
  fi
  [ ${#running[@]} -eq 0 ] ||
    die "only ${running[*]} running in $state: '$0 stop' first (or 'start NAME')"

  ensure_node_modules
  find_moto_python
  t0=$(now_us)
  forget_all
  rm -f "$state"/*.log
  full_start=1
  echo "$quiet $in_memory" > "$state/options"
  read -r -a ports <<< "$(free_ports ${#SERVERS[@]})"
  [ ${#ports[@]} -eq ${#SERVERS[@]} ] || die "could not pick free ports with $test_python"
  for i in "${!SERVERS[@]}"; do echo "${ports[$i]}" > "$state/${SERVERS[$i]}.port"; done
  for n in "${SERVERS[@]}"; do launch "$n"; done
  wait_ready "${SERVERS[@]}"
  say "all answering after $(elapsed "$t0");" \
      "creating bucket $BUCKET, container $BUCKET, moto-auth key"
  write_env
  provision "${SERVERS[@]}"
  write_env
  started_now=() full_start=0
  say "ready after $(elapsed "$t0"): moto :$(port_of moto), moto-auth :$(port_of moto-auth)," \
      "s3rver :$(port_of s3rver), azurite :$(port_of azurite)," \
      "azurite-oauth :$(port_of azurite-oauth), identity :$(port_of identity)," \
      "databricks :$(port_of databricks);" \
      "variables in $state/env"
  print_env
}

cmd_stop_all() {
  local n t0 any=0
  t0=$(now_us)
  for n in "${SERVERS[@]}"; do
    [ -f "$state/$n.pid" ] && any=1
    stop_one "$n"
  done
  forget_all
  if [ $any = 1 ]; then
    say "stopped after $(elapsed "$t0"); logs kept in $state/*.log"
  else
    say "nothing was running"
  fi
}

cmd_status() {
  local n all=0 pid note
  for n in "${SERVERS[@]}"; do
    if is_running "$n"; then
      pid=$(pid_of "$n") note=""
      answers "$n" || { note=" (not answering)"; all=1; }
      printf '%-10s running  pid %-7s http://%s:%s%s\n' \
        "$n" "$pid" "$HOST" "$(port_of "$n")" "$note"
    elif [ -n "$(port_of "$n")" ]; then
      printf '%-10s stopped  (port %s kept for start/restart)\n' "$n" "$(port_of "$n")"; all=1
    else
      printf '%-10s not started\n' "$n"; all=1
    fi
  done
  return $all
}

case "$cmd" in
  start)
    lock_state
    if [ -n "$name" ]; then start_one "$name"; else cmd_start_all; fi ;;
  stop)
    lock_state
    if [ -n "$name" ]; then stop_one "$name"; else cmd_stop_all; fi ;;
  restart)
    [ -n "$name" ] || die "restart needs a server name (${SERVERS[*]})"
    lock_state
    [ -n "$(port_of "$name")" ] || die "$name was never started in $state: run '$0 start' first"
    stop_one "$name"
    [ "$down_s" = 0 ] || { say "$name stays down for ${down_s}s"; sleep "$down_s"; }
    start_one "$name" ;;
  status) cmd_status ;;
  env) print_env ;;
  *) die "unknown command '$cmd' (start, stop, restart, status, env; --help)" ;;
esac
