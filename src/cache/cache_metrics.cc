#include "cache/cache_metrics.h"

namespace ferry::internal_cache {

CacheMetrics& CacheMetrics::Get() {
  static CacheMetrics* const instance = new CacheMetrics{
      .hits = metrics::GetCounter("/ferry/cache/hits"),
      .misses = metrics::GetCounter("/ferry/cache/misses"),
      .downloads = metrics::GetCounter("/ferry/cache/downloads"),
      .downloaded_bytes = metrics::GetCounter("/ferry/cache/downloaded_bytes"),
      .wait_ns = metrics::GetCounter("/ferry/cache/wait_ns"),
      .evictions = metrics::GetCounter("/ferry/cache/evictions"),
      .evicted_bytes = metrics::GetCounter("/ferry/cache/evicted_bytes"),
      .hash_failures = metrics::GetCounter("/ferry/cache/hash_failures"),
      .damaged_copies = metrics::GetCounter("/ferry/cache/damaged_copies"),
      .reverified_files = metrics::GetCounter("/ferry/cache/reverified_files"),
      .checksummed_downloads = metrics::GetCounter("/ferry/cache/checksummed_downloads"),
      .checksum_failures = metrics::GetCounter("/ferry/cache/checksum_failures"),
      .slot_wait_ns = metrics::GetCounter("/ferry/cache/slot_wait_ns"),
      .limit_bytes =
          metrics::GetGauge("/ferry/cache/limit_bytes", metrics::AcrossProcesses::kLargest),
  };
  return *instance;
}

}  // namespace ferry::internal_cache
