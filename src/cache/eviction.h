// Eviction: keeping the shard files of a cache folder within cache_limit.
//
// Which shards go first (OrderVictims, a pure function):
//   1. shards this process will not need (absent from SetUpcoming's list), least recently used
//      first - the time of a shard's last Acquire, by any process, is the mtime of its use-lock
//      file (StampLastUse), so the order is shared by every process on the node;
//   2. then upcoming shards, the one needed furthest in the future first (Belady's rule: with
//      the next epoch's order known this beats LRU, which evicts exactly the shards a cyclic
//      pass needs next).
//
// How (MakeRoom), under the folder-wide cache.lock so that two processes never pick the same
// victim or both count the same free space:
//   0. the usage ledger, kept in cache.lock itself, holds the bytes of the last scan plus every
//      reservation made since by any process: when it is recent (younger than 1 s or ten scans'
//      time) and the new download fits, the download is added to it and no scan happens - a
//      folder of a million small files is not statted once per file fetched. The ledger only
//      ever over-counts (a reservation for a download that failed, a file deleted by hand), and
//      a stale one is replaced by a scan;
//   1. stat every shard file the index names (raw and zip), plus the temporaries of downloads
//      being written (SweepTemporaries, which removes those of dead ones): the bytes in use;
//   2. while used + needed + headroom > limit, take the next victim's use-lock exclusively
//      without waiting - failing means some process has it pinned, so it is skipped - delete its
//      files, and release the lock. An upcoming shard needed no later than the one being
//      fetched is never a victim: evicting it to fetch a shard needed later would only fetch it
//      again first (a shard absent from the list is needed now). An Acquire racing with this waits
//      on the use-lock and then finds the file gone, so it downloads it again instead of reading a
//      deleted shard. The headroom (0 for shard caches) frees more than needed at once, so that a
//      cache at its limit does not scan for every small file;
//   3. the ledger becomes the bytes left plus this download.
// When every remaining shard is pinned the download goes ahead anyway (fits = false): the limit
// is exceeded by what is pinned, never by deleting a shard in use.
//
// Thread-safety: functions are reentrant; MakeRoom serializes with itself through cache.lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "cache/cache_layout.h"
#include "ferry/format/dataset_description.h"
#include "ferry/result.h"

namespace ferry::internal_cache {

inline constexpr size_t kNotUpcoming = static_cast<size_t>(-1);

struct EvictionCandidate {
  size_t shard = 0;
  int64_t last_use_ns = 0;  // since the epoch; older is evicted first
  uint64_t bytes = 0;       // of its files present (raw and compressed)
};

/// For each of `num_shards` shards, its first position in `upcoming` (kNotUpcoming if absent).
/// Out-of-range entries are ignored.
std::vector<size_t> UpcomingPositions(std::span<const size_t> upcoming, size_t num_shards);
/// The same over several readers' lists: each shard at its soonest position in any of them (the
/// readers advance together).
std::vector<size_t> UpcomingPositions(std::span<const std::span<const size_t>> lists,
                                      size_t num_shards);

/// Sorts `candidates` victims-first (see the file comment). `upcoming_position` is indexed by
/// shard; shards past its end count as not upcoming.
void OrderVictims(std::vector<EvictionCandidate>& candidates,
                  std::span<const size_t> upcoming_position);

/// Records "used now" on the use-lock file `fd` (its mtime, at nanosecond precision where the
/// caller owns the file, else the kernel's coarser "now").
Status StampLastUse(int fd);

/// Bytes of shard files (raw and zip) of `index` present under `layout` now.
uint64_t MeasureDiskUsage(const CacheLayout& layout, const DatasetDescription& index);

/// What the usage ledger takes in cache.lock (it is padded to this size).
inline constexpr uint64_t kLedgerBytes = 64;
/// What the totals of exited processes' counters (.ferry/metrics/totals.json) are counted at,
/// whether or not written yet.
inline constexpr uint64_t kMetricsTotalsBytes = 4096;

/// Bytes of the files besides shards that a cache_limit holds too: index.json and its binary
/// form (.ferry/index.bin), the records of the folder's remote and its mirrors
/// (.ferry/origin.json, .ferry/mirrors.json), the usage ledger (kLedgerBytes, counted whether or
/// not it is written yet) and the node-wide metrics' files (.ferry/metrics: 8 KiB per process
/// reading now, and the totals at kMetricsTotalsBytes at least). The lock files are empty.
uint64_t MeasureOtherBytes(const CacheLayout& layout);

/// What the plan of a cache_limit (the order that fits it, and whether a dataset fits whole:
/// src/stream/streaming_dataset.cc) counts for those files: index.json twice (its binary form is
/// smaller), kPlannedRecordsBytes for the records of the remote and its mirrors, and the ledger,
/// the metrics' totals and one process's metrics file. A function of index.json alone, so that
/// every worker, rank and node - and a resumption - plans the same order: what the files take
/// now (MeasureOtherBytes) changes as processes come and go and as the binary form is written,
/// and two workers of one job that narrowed their shuffles differently would read some samples
/// twice and others never.
uint64_t PlannedOtherBytes(const CacheLayout& layout);
inline constexpr uint64_t kPlannedRecordsBytes = 4096;

/// The shards of `index` with a file (raw or zip) under `layout`, each with its last use (as
/// eviction orders them: the use-lock's mtime, or the files' own when it has none).
std::vector<EvictionCandidate> LocalShards(const CacheLayout& layout,
                                           const DatasetDescription& index);

struct EvictResult {
  bool pinned = false;  // some reader has it pinned: nothing was deleted
  uint64_t freed = 0;   // bytes of its files deleted (0: none was there)
};

/// Deletes shard `k`'s files (raw and zip) unless it is pinned, as MakeRoom evicts a victim
/// (under cache.lock, with the shard's use-lock taken exclusively without waiting); the ledger
/// is lowered by what was freed. Bumps the evictions/evicted_bytes counters.
Result<EvictResult> EvictShard(const CacheLayout& layout, const DatasetDescription& index,
                               size_t k);

/// The temporaries of shard files under `layout` (every shard's but `except_shard`'s): those of
/// downloads that died - their shard's download lock is free - are removed; returns the bytes
/// the rest will take, downloads being written now, each at its full size (index.json's) however
/// much has landed. A large download preallocates its whole shard, so a killed one's temporary
/// would take that much of the disk, uncounted, until its shard is fetched again.
uint64_t SweepTemporaries(const CacheLayout& layout, const DatasetDescription& index,
                          size_t except_shard = static_cast<size_t>(-1));

struct RoomRequest {
  uint64_t limit = 0;     // cache_limit
  uint64_t needed = 0;    // bytes the coming download will add at its peak
  size_t for_shard = 0;   // the shard being fetched: never a victim
  uint64_t headroom = 0;  // bytes freed beyond `needed` once eviction has to run
};

struct RoomResult {
  uint64_t used_before = 0;  // bytes of shard files when the scan ran
  uint64_t used_after = 0;
  size_t evicted_shards = 0;
  uint64_t evicted_bytes = 0;
  bool fits = true;     // used_after + needed <= limit
  bool scanned = true;  // false: the usage ledger answered without a scan
};

/// Evicts unpinned shards until `needed` more bytes fit under the limit (see the file comment).
/// Bumps the evictions/evicted_bytes counters.
Result<RoomResult> MakeRoom(const CacheLayout& layout, const DatasetDescription& index,
                            std::span<const size_t> upcoming_position, const RoomRequest& request);

}  // namespace ferry::internal_cache
