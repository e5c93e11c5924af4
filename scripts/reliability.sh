#!/usr/bin/env bash
# make reliability: the reliability suites at full strength, and docs/reliability.md with what
# they did. `make test` runs a short version of each (fewer kill rounds, one Azure fault run, a
# fixed-count fuzz run).
#   fault suite  streaming from s3rver and Azurite through ferry-wan injecting cut, reset,
#                stalled, flipped and trickling bodies, refused requests, 503 SlowDown / ServerBusy and
#                500 replies (each alone, then mixed)
#   kill suite   ferry stream SIGKILLed at random moments, FERRY_KILL_ROUNDS (50) rounds
#   race suite   eight processes, different orders, one cache folder at 60 % of the dataset
#   throttle     two processes through ferry-wan throttling beyond 20 requests/s
#   power cut    cached shards damaged as a power cut leaves them, after a simulated reboot
#   lies         ferry-wan telling lies: short bodies with a Content-Length that agrees, other
#                ranges, the whole object for a range, HTML pages with 200, a changed object
#   soak         tests/soak/soak.py for 2 minutes: four DataLoader jobs under faults, throttling
#                bursts and kills (make soak runs it for 20)
#   hostile      symlinks, unsafe listing keys, wrong credentials, TLS without the CA
#   fuzzing      every libFuzzer target for RELIABILITY_FUZZ_SECONDS (20) each
#   secrets      the debug log of all of the above searched for the servers' secrets
# The servers are started here (scripts/test-servers.sh) and stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${FERRY_KILL_ROUNDS:-50}
fuzz_seconds=${RELIABILITY_FUZZ_SECONDS:-20}
out=build/reliability
mkdir -p "$out"
log="$out/suites.log"

unset $(env | grep -o '^FERRY_TEST_[A-Z0-9_]*' || true)
stop_servers() { scripts/test-servers.sh stop >/dev/null 2>&1 || true; }
trap stop_servers EXIT
eval "$(scripts/test-servers.sh start --quiet)"

filter='Stream.FaultsCostRetriesNeverWrongOrMissingSamples:Stream.FaultsOnAzureCostRetriesToo'
filter+=':Stream.AReadOnlyCacheFolderIsAClearErrorOrReadInPlace'
filter+=':Stream.TemporariesStayInTheCacheFolderWhateverTmpdirSays'
filter+=':Stream.SurvivesRepeatedKillsAtRandomMoments:Stream.EightProcessesShareATightCacheWithoutHarm'
filter+=':Stream.AKilledDownloadLeavesNothingThatPassesForAShard:Stream.ACorruptedShardIsDataLossNamingIt'
filter+=':FileDatasetOnMoto.*:Credentials.*:Cli.DebugLogsAndErrorsNeverShowSecrets'
filter+=':Stream.ThrottlingCostsTimeNeverSamples:Stream.AShardTheIndexListsAndTheStoreLacksIsNamed'
started=$(date +%s)
FERRY_KILL_ROUNDS=$rounds FERRY_FAULT_SUITE=full FERRY_LOG=debug ./build/dev/tests/ferry_integration_test \
  --gtest_filter="$filter" > "$log" 2>&1 || { tail -n 60 "$log"; echo "a suite failed: $log"; exit 1; }
./build/dev/src/files/ferry_files_test --gtest_filter='*Symlink*:*Killed*:*Hostile*' >> "$log" 2>&1
./build/dev/src/cache/ferry_cache_test \
  --gtest_filter='*Kill*:*Corrupt*:*Private*:*FullDisk*:*PowerCut*:*Md5*:*DigestRecord*' >> "$log" 2>&1
./build/dev/src/stream/ferry_stream_test --gtest_filter='CacheLimitTest.TheNarrowedOrder*' >> "$log" 2>&1
./build/dev/tests/ferry_cli_test --gtest_filter='*FullDisk*' >> "$log" 2>&1
./build/dev/src/storage/ferry_storage_test --gtest_filter='RequestThrottle*:ExecuteThroughGate*' \
  >> "$log" 2>&1
PYTHONPATH=build/release/python /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  tests/python/test_tls.py >> "$log" 2>&1
suites_s=$(( $(date +%s) - started ))

PYTHONPATH=build/release/python /usr/bin/python3 tests/soak/soak.py --seconds 120 --kill-every 30 \
  --out "$out/soak" --wan build/release/bench/ferry-wan > "$out/soak.log" 2>&1 ||
  { tail -n 30 "$out/soak.log"; echo "the soak failed: $out/soak.log"; exit 1; }
soak_line=$(grep -m1 "^soak:" "$out/soak.log")
soak_desc="four jobs (\`StreamingDataset\` under torch's \`DataLoader\`, two persistent workers each, \`validate_hash\`, shuffled) reading epoch after epoch for 2 minutes (\`make soak\`: 20) from s3rver through \`ferry-wan\` - 5 % of connections and requests faulted or lied to, throttling bursts (beyond 20 requests/s for 5 s of every 30) - into one cache folder whose limit holds half the dataset (shuffle blocks of 3 shards); every 30 s one job (never the first) SIGKILLed with its workers and started again. Every epoch of every job reads every sample once with its bytes as written; the first job's memory, descriptors and threads after warm-up do not grow (the last third's median within 10 % and 32 MiB, 8 descriptors, 4 threads of the first third's peak); the folder's shards stay within the limit plus the slack (one shard per download in flight beyond the first, 2 x 8 readers - 1)"

kill_line=$(grep -m1 "^kill suite:" "$log")
fault_line=$(grep "^fault suite " "$log" | sed -E 's/^fault suite ([a-z0-9]+): /\1: /' | paste -sd ';' - |
  sed 's/;/; /g')
# "STORE KINDS: F faults, S requests seen by the proxy, R requests, B bytes fetched of T", or
# "..., ended with a clear error" for a run that stopped (allowed for corruptions and spent
# retries).
fault_rows=$(grep -E "^(s3rver|azurite) [a-z0-9,]+: [0-9]+ faults" "$log" | awk '
  {
    store = $1; kinds = $2; sub(/:$/, "", kinds); faults = $3; seen = $5
    share = seen > 0 ? sprintf("%.0f %%", 100 * faults / seen) : "-"
    if ($0 ~ /ended with a clear error/) {
      printf "| %s | %s | %d | %d | %s | stopped with an error naming the shard | - |\n", store, kinds, faults, seen, share
    } else {
      printf "| %s | %s | %d | %d | %s | %d | %d of %d |\n", store, kinds, faults, seen, share, $11, $13, $17
    }
  }')
race_line=$(grep -m1 "^race:" "$log")
throttle_line=$(grep "^throttle suite " "$log" | sed -E 's/^throttle suite ([a-z0-9]+): /\1: /' |
  paste -sd ';' - | sed 's/;/; /g')
passed=$(grep -c "^\[       OK \]" "$log" || true)

fuzz_rows=""
crashes=0
for target in index_fuzzer mds_shard_reader_fuzzer storage_fuzzer; do
  corpus=build/fuzz/corpus/$target
  mkdir -p "$corpus" "$out/crashes/$target"
  [ "$target" = storage_fuzzer ] && cp -f fuzz/corpus/storage_fuzzer/* "$corpus/"
  fuzz_log="$out/$target.log"
  status=ok
  if ! timeout $((fuzz_seconds + 120)) "build/fuzz/fuzz/ferry_$target" -max_total_time="$fuzz_seconds" \
       -max_len=262144 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$out/crashes/$target/" "$corpus" > "$fuzz_log" 2>&1; then
    status=CRASH
    crashes=$((crashes + 1))
  fi
  runs=$(grep -o "stat::number_of_executed_units: [0-9]*" "$fuzz_log" | grep -o "[0-9]*$" || echo 0)
  fuzz_rows+="| $target | $fuzz_seconds | $runs | $status |"$'\n'
done

secrets=0
for secret in "$FERRY_TEST_MOTO_AUTH_SECRET_KEY" "$FERRY_TEST_AZURITE_KEY"; do
  if grep -qF -- "$secret" "$log"; then secrets=$((secrets + 1)); fi
done
if grep -qE "Signature=[0-9a-f]{16}|[?&]sig=[^R&]" "$log"; then secrets=$((secrets + 1)); fi

cat > docs/reliability.md <<DOC
# Reliability

Written by \`make reliability\` (scripts/reliability.sh) on $(date -u +%Y-%m-%d), on this
project's 2-core CI machine. \`make test\` runs a short version of every suite.

| suite | what it does | result |
|---|---|---|
| fault | a dataset (32 shards, xxh64) streamed from s3rver and from Azurite through \`ferry-wan\` injecting faults - body faults (cut with the full length promised, reset, stalled, bit-flipped, trickling at 1 KiB/s) into a share of the connections, request faults (refused, 503 SlowDown, 503 ServerBusy, 500) into a share of the requests, each kind alone, then all mixed, at least 10 % of the requests faulted in every run; every run must read every sample with every shard checked (\`--validate-hash\`) and fetch each byte once (cut, reset and slowed bodies resume for their missing range only), or stop with an error naming the shard - only when corruptions or lies spoiled every download of one shard (6 in all; a flipped ETag header makes it look replaced) or a request's every attempt was faulted; shards left in the cache must be whole | ${fault_line} |
| lying server | \`ferry-wan\` answering a share of the GETs with what the server did not say, each lie alone and all mixed (in the fault runs below): a short body with a Content-Length that agrees (a 206 keeping the Content-Range of the whole range), a 206 for another range, a 200 with the whole object for a range, an HTML error page with 200, another ETag - and 412 to a resume pinned with If-Match (the object changed while it was read); each caught (a size other than index.json's, a Content-Range that starts elsewhere, parts with two ETags, a 412) and the shard downloaded again (up to 6 downloads, pausing between them) or index.json fetched again (up to 3), or a clear error naming it; and an index.json that lists a shard the store does not have: \`kNotFound\` naming the shard's URL at once | the fault suite's \`short\`, \`range\`, \`html\`, \`truncate,whole\`, \`truncate,etag\` and mixed runs below; the missing shard: passed |
| soak | ${soak_desc} | ${soak_line#soak: } |
| throttle | two \`ferry stream\` processes at once, 32 downloads each, through \`ferry-wan\` answering requests beyond 20 per second as S3 throttles (503 SlowDown, \`Retry-After: 1\`; Azure's 503 ServerBusy against Azurite): every sample read, every byte fetched once, every throttle reply waited out at the target's gate and asked again - never an error | ${throttle_line} |
| power cut | a cached shard damaged as a power cut leaves it - cut short, one byte flipped, a block of zeros, a hole, a garbled digest record, no record at the wrong size - with the boot moved past it: each fetched again on its next use; an undamaged one read once, not fetched, and noted as verified | passed |
| store checksum | a body damaged on the way (bit flips from \`ferry-wan\`, and in a unit test every body of a shard damaged differently) without \`--validate-hash\`: caught by the checksum the store sends (s3rver's ETag, an MD5; S3's CRCs, checked on moto in \`test_store_checksums.py\`), fetched again, or a clear error naming both digests; an "MD5" that is not one is dropped after two agreeing downloads; a reply whose ETag was flipped too (no MD5 where the store's replies carry one) is downloaded again until two bring the same bytes | passed (the fault suite's \`flip,unhashed\` run below) |
| kill | \`ferry stream\` over zstd shards with a cache_limit (downloads, decompression, renames, evictions, the index write) SIGKILLed at a random moment each round; after every kill each file under a shard's name must be exactly that file (size and xxh64) and index.json whole; then an uninterrupted run reads the epoch | ${kill_line#kill suite: } |
| race | eight processes with different shuffles through one cache folder at 60 % of the dataset, \`--touch\` reading every byte, \`--validate-hash\`; every process reads its whole epoch; disk use sampled every 10 ms stays within the limit plus the documented slack | ${race_line#race: } |
| hostile input | a full disk (a tmpfs of four shards in a mount namespace of its own, no cache_limit: what the schedule allows is evicted to make room and the download goes on; with every shard pinned, a clear error naming the folder, the free space and the cache_limit that would fit, nothing partial left), a file size limit (a clear error naming the shard, nothing left behind, the next fetch works), \`ferry convert\` (MDS and WebDataset) into a full 1 MiB tmpfs (a clear error naming the folder and its free space, only whole shards left, no index.json), a read-only cache folder (run as an unprivileged user, and on a read-only bind mount: empty, a clear error naming it and nothing written; complete, read in place with no remote request), TMPDIR on another filesystem (never written: temporaries stay beside their files in the cache folder), a symlink planted in the cache folder (nothing written through it), unsafe listing keys, a corrupt shard (DataLoss naming it), wrong credentials (clear error, no secret), a self-signed TLS server (refused unless its CA is given), killed file downloads and packs | passed |

$passed test cases passed in ${suites_s} s, with FERRY_LOG=debug.

Faults by run ("seen" counts every request that reached the proxy, retries included; "ferry's
requests" the requests a completed run needed; a body fault may hit several requests of one
connection, or none):

| store | faults | injected | requests seen | faults / requests seen | ferry's requests | bytes fetched |
|---|---|---|---|---|---|---|
${fault_rows}

## Fuzzing

| target | seconds | executions | result |
|---|---|---|---|
${fuzz_rows}
Crashes found in this run: $crashes (artifacts under build/reliability/crashes/). Found and fixed
while the storage target was written: a listing date far in the future overflowed the clock in
the S3, Azure and HTTP stores, and a number of the wrong kind in a stored file listing reached
nlohmann's undefined conversion.

## Secrets

Occurrences of the servers' secrets, or of a request signature, in the debug log of all of the
above: **$secrets**.

Found by the fault suite and fixed: a bit flipped in an HTTP status line made libcurl report
"Received HTTP/0.9" as an unsupported protocol, which ferry took for a bad URL and did not retry.

Found by the soak and fixed: two DataLoader workers of one job narrowed a shuffle to fit a tight
cache_limit by what the folder's other files took at the moment each opened - other jobs'
metrics files come and go - so their orders could differ by a block, and an epoch read some
samples twice and others never. The plan now counts those files as a function of index.json
alone (the same for every worker, rank, node and resumption).

Found by the 20-minute soak and fixed: with 19 jobs killed, the folder held up to 7.8 MB of
shards under a 6.0 MB limit, past the slack for downloads in flight. A scan that makes room
counted a whole download in flight at what had landed, so the rest of each arrived uncounted;
and the metrics file of every killed process stayed (65 of them), shrinking the room the limit
left the shards. Scans now count downloads being written at their full size (and sweep dead
ones' temporaries), and a process starting to publish folds the killed ones' files. The
20-minute soak then (\`make soak\`, 1,206 s, 19 kills, 2,355 epochs, 7,065,000 samples, none
lost, repeated or corrupt, no job failed; 10,718 faults and 373 throttle replies in 202,681
requests): peak disk 7.44 MB of the 6.02 MB limit plus 1.47 MB of slack, none of it in
downloads' temporaries; survivor RSS 548 -> 547 MiB, descriptors 161 -> 134, threads 21 -> 20.
What still passes the limit is shards the readers have in use (a process going over it says so
once, \`going over cache_limit\`).

## Not yet

HEAD, LIST and uploads are not throttled at the gate. The soak runs one store (s3rver) and one
format (MDS). Readers' shards in use can pass the limit by a few shards when four jobs share a
folder that holds half the dataset; the soak's peak came within 0.06 MB of its bound.
DOC
echo "docs/reliability.md written: $kill_line; $race_line; fuzz crashes $crashes; secrets $secrets"
[ "$crashes" -eq 0 ] && [ "$secrets" -eq 0 ]
