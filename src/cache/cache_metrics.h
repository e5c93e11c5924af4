// The cache layer's counters, registered under /ferry/cache/ in the process-wide registry.
//
//   hits             Acquires that found the raw shard already local
//   misses           Acquires that had to wait for a download (theirs or another process's)
//   downloads        shard files fetched from the remote (a refetch after a bad hash counts)
//   downloaded_bytes bytes received from the remote into shard temporaries
//   wait_ns          time Acquire spent on misses: waiting for the download lock and downloading
//   evictions        shard files deleted to stay within cache_limit (raw and zip count once)
//   evicted_bytes    bytes those evictions freed
//   hash_failures    downloaded or local compressed files whose validate_hash digest mismatched
//   damaged_copies   cached shard files found short, holed or with the wrong digest (what a
//                    power cut leaves) and downloaded again
//   reverified_files cached shard files last changed before this boot, read once and found to
//                    match their digest record (digest_record.h)
//   checksummed_downloads  downloads whose bytes matched the checksum the store sent with them
//   checksum_failures      downloads whose bytes did not (each is fetched again)
//   slot_wait_ns     time downloads waited for a slot of node_download_concurrency (part of
//                    wait_ns)
//   limit_bytes      (a gauge) the cache_limit of the last cache folder this process opened
//                    with one (0: none); `ferry top` shows the largest of a folder's readers'
//
// Thread-safety: counters are relaxed atomics; the struct lives as long as the process.
#pragma once

#include "ferry/metrics/metrics.h"

namespace ferry::internal_cache {

struct CacheMetrics {
  metrics::Counter& hits;
  metrics::Counter& misses;
  metrics::Counter& downloads;
  metrics::Counter& downloaded_bytes;
  metrics::Counter& wait_ns;
  metrics::Counter& evictions;
  metrics::Counter& evicted_bytes;
  metrics::Counter& hash_failures;
  metrics::Counter& damaged_copies;
  metrics::Counter& reverified_files;
  metrics::Counter& checksummed_downloads;
  metrics::Counter& checksum_failures;
  metrics::Counter& slot_wait_ns;
  metrics::Gauge& limit_bytes;

  /// The process-wide instance (registered on first use).
  static CacheMetrics& Get();
};

}  // namespace ferry::internal_cache
