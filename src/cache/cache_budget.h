// CacheBudget: how one cache_limit is shared out among what the readers of a cache folder keep
// on disk at once. Three parts, across every reader of the folder (all processes on the node):
//   working set  shards read and still needed later in the epoch (unpinned; eviction keeps them
//                because the readers list them as upcoming): at most half the limit - the order
//                is narrowed until it fits (src/order/working_set.h);
//   open         shards mapped behind the readers, pinned so that a shuffled order hopping
//                between them does not re-open one per sample: a quarter;
//   ahead        shards fetched or in flight ahead of the readers, pinned until read: the rest,
//                and never less than a quarter.
// The parts add up to the limit, so a download always finds a shard that no reader needs any
// more to evict: no shard is fetched twice in an epoch for want of room. Without a limit nothing
// is bounded; when every stream fits its limit whole nothing is evicted, and only what is fetched
// ahead is held to half the limit.
//
// Thread-safety: an immutable value.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

#include "ferry/format/dataset_description.h"
#include "ferry/result.h"

namespace ferry::internal_cache {

/// One stream's cache folder, as CheckCacheLimit sees it.
struct CacheFolder {
  std::filesystem::path local;  // the folder (its index.json is there)
  uint64_t index_bytes = 0;     // of its index.json
  const DatasetDescription* index = nullptr;
};

/// The checks Mosaic Streaming makes of a cache_limit when a dataset opens (kInvalidArgument,
/// which Python raises as a ValueError, with the gist of its messages): the limit must exceed
/// the index.json files of all the streams together, and be at least four times the largest
/// shard counting both its raw and its compressed file (both are there while it is unpacked).
Status CheckCacheLimit(uint64_t cache_limit, std::span<const CacheFolder> folders);

class CacheBudget {
 public:
  CacheBudget() = default;
  /// `limit` of each stream's cache folder; `fits` when every stream fits it whole.
  CacheBudget(std::optional<uint64_t> limit, bool fits) : limit_(limit), fits_(fits) {}

  /// Whether the limit binds: set, and some stream does not fit it whole.
  bool limited() const { return limit_.has_value() && !fits_; }
  const std::optional<uint64_t>& limit() const { return limit_; }

  /// The most bytes the order's working set may take (per stream).
  uint64_t WorkingSetRoom() const;
  /// The smallest cache_limit whose room holds `working_set` bytes.
  static uint64_t LimitToHold(uint64_t working_set);

  /// Bytes of open shards each of `readers` may keep pinned behind it (UINT64_MAX: no bound).
  uint64_t OpenBytesPerReader(uint32_t readers) const;
  /// Bytes each of `readers` may have fetched or in flight ahead of it (UINT64_MAX: no bound),
  /// when the order they read keeps `working_set` bytes live (its largest stream's). Where
  /// every stream fits its limit whole, half the limit, whatever the readers.
  uint64_t AheadBytesPerReader(uint32_t readers, uint64_t working_set) const;

 private:
  std::optional<uint64_t> limit_;
  bool fits_ = true;
};

}  // namespace ferry::internal_cache
