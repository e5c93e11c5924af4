#include "cache/cache_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace ferry::internal_cache {

Status CheckCacheLimit(uint64_t cache_limit, std::span<const CacheFolder> folders) {
  uint64_t index_bytes = 0;
  const CacheFolder* largest_index = nullptr;
  uint64_t largest_shard = 0;
  std::filesystem::path largest_shard_path;
  for (const CacheFolder& folder : folders) {
    index_bytes += folder.index_bytes;
    if (!largest_index || folder.index_bytes > largest_index->index_bytes) largest_index = &folder;
    if (folder.index == nullptr) continue;
    for (const ShardDescription& shard : folder.index->shards) {
      const uint64_t bytes = shard.raw_bytes() + (shard.zip_data ? shard.stored_bytes() : 0);
      if (bytes > largest_shard) {
        largest_shard = bytes;
        largest_shard_path = folder.local / shard.raw_data.basename;
      }
    }
  }
  if (largest_index != nullptr && cache_limit <= index_bytes) {
    const std::string index_path = (largest_index->local / "index.json").string();
    return InvalidArgumentError(fmt::format(
        "Minimum cache usage ({} bytes: {}) is larger than the cache limit ({} bytes) leaves "
        "room for. Please raise `cache_limit`; as high as possible avoids fetching shards again "
        "and again",
        index_bytes,
        folders.size() == 1 ? index_path
                            : fmt::format("the index.json of {} streams, the largest {}",
                                          folders.size(), index_path),
        cache_limit));
  }
  if (largest_shard > cache_limit / 4) {  // cache_limit < 4 x largest_shard, without overflow
    return InvalidArgumentError(fmt::format(
        "Cache limit ({} bytes) is too low. Increase the `cache_limit` to at least four times "
        "the largest shard size ({} bytes: {}, raw (decompressed) and zip (compressed) files "
        "together); as high as possible avoids fetching shards again and again",
        cache_limit, largest_shard, largest_shard_path.string()));
  }
  return Status::Ok();
}

uint64_t CacheBudget::WorkingSetRoom() const { return limit_ ? *limit_ / 2 : UINT64_MAX; }

uint64_t CacheBudget::LimitToHold(uint64_t working_set) {
  return working_set > UINT64_MAX / 2 ? UINT64_MAX : 2 * working_set;
}

uint64_t CacheBudget::OpenBytesPerReader(uint32_t readers) const {
  if (!limited()) return UINT64_MAX;
  return *limit_ / 4 / std::max<uint32_t>(1, readers);
}

uint64_t CacheBudget::AheadBytesPerReader(uint32_t readers, uint64_t working_set) const {
  if (!limit_) return UINT64_MAX;
  if (fits_) return *limit_ / 2;  // nothing is evicted, but half the limit is plenty ahead
  const uint64_t quarter = *limit_ / 4;
  const uint64_t rest = *limit_ - quarter - std::min(working_set, *limit_ - quarter);
  return std::max(quarter, rest) / std::max<uint32_t>(1, readers);
}

}  // namespace ferry::internal_cache
