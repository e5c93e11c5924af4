// StreamCaches: the cache folders of a dataset's streams seen as one, for what Mosaic's dataset
// lets a user do to its cache by hand: shards numbered over all the streams (those of stream 0
// first), the bytes in the folders as Mosaic counts them, and which shard is the coldest.
//
// Thread-safety: const methods only, over caches that are themselves thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "ferry/cache/shard_cache.h"
#include "ferry/result.h"
#include "stream/prefetcher.h"

namespace ferry::internal_stream {

struct StreamCache {
  ShardCache* cache = nullptr;
  std::filesystem::path local;  // the folder, with its index.json
  bool remote = false;          // false: its files are the only copy, never evicted
};

class StreamCaches {
 public:
  explicit StreamCaches(std::vector<StreamCache> streams) : streams_(std::move(streams)) {}

  /// The stream and shard of `shard` numbered over all the streams; kOutOfRange past the end.
  Result<ShardKey> Locate(size_t shard) const;

  /// Bytes in the folders now: each index.json, and the shard files (raw and compressed).
  uint64_t Usage() const;

  /// Mosaic's checks of a cache_limit at open (src/cache/cache_budget.h's CheckCacheLimit).
  Status CheckLimit(uint64_t cache_limit) const;

  /// Evicts the least recently used local shard of a remote stream that `evict` evicts (it
  /// returns the bytes freed, or kFailedPrecondition for a shard being read: the next is
  /// tried), and returns its number; kInvalidArgument when none could be.
  Result<size_t> EvictColdest(const std::function<Result<uint64_t>(const ShardKey&)>& evict) const;

 private:
  std::vector<StreamCache> streams_;
};

}  // namespace ferry::internal_stream
