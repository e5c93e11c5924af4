#include "stream/stream_caches.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <tuple>

#include "cache/cache_budget.h"

namespace ferry::internal_stream {

Result<ShardKey> StreamCaches::Locate(size_t shard) const {
  size_t first = 0;
  for (uint32_t s = 0; s < streams_.size(); ++s) {
    const size_t n = streams_[s].cache->index().shards.size();
    if (shard < first + n) return ShardKey{s, static_cast<uint32_t>(shard - first)};
    first += n;
  }
  return OutOfRangeError(fmt::format("shard {} asked for; the streams have {}", shard, first));
}

uint64_t StreamCaches::Usage() const {
  uint64_t used = 0;
  for (const StreamCache& stream : streams_) {
    std::error_code ec;
    const uint64_t index_bytes = std::filesystem::file_size(stream.local / "index.json", ec);
    used += (ec ? 0 : index_bytes) + stream.cache->DiskUsage();
  }
  return used;
}

Status StreamCaches::CheckLimit(uint64_t cache_limit) const {
  std::vector<internal_cache::CacheFolder> folders;
  for (const StreamCache& stream : streams_) {
    std::error_code ec;
    const uint64_t index_bytes = std::filesystem::file_size(stream.local / "index.json", ec);
    folders.push_back({.local = stream.local,
                       .index_bytes = ec ? 0 : index_bytes,
                       .index = &stream.cache->index()});
  }
  return internal_cache::CheckCacheLimit(cache_limit, folders);
}

Result<size_t> StreamCaches::EvictColdest(
    const std::function<Result<uint64_t>(const ShardKey&)>& evict) const {
  struct Candidate {
    int64_t last_use_ns;
    size_t shard;
    ShardKey key;
  };
  std::vector<Candidate> candidates;
  size_t first = 0;
  bool any_remote = false;
  for (uint32_t s = 0; s < streams_.size(); ++s) {
    if (streams_[s].remote) {
      any_remote = true;
      for (const auto& [k, last_use_ns] : streams_[s].cache->LocalShards()) {
        candidates.push_back({last_use_ns, first + k, {s, static_cast<uint32_t>(k)}});
      }
    }
    first += streams_[s].cache->index().shards.size();
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.last_use_ns, a.shard) < std::tie(b.last_use_ns, b.shard);
  });
  size_t in_use = 0;
  for (const Candidate& c : candidates) {
    Result<uint64_t> freed = evict(c.key);
    if (freed && *freed > 0) return c.shard;
    if (!freed && freed.error().code() != StatusCode::kFailedPrecondition) return freed.error();
    in_use += !freed;
  }
  return InvalidArgumentError(fmt::format(
      "Attempted shard eviction, but there are no shards present locally to evict{}. Your cache "
      "limit may be too low.",
      !any_remote  ? std::string(" (no stream has a remote: its files are the only copy)")
      : in_use > 0 ? fmt::format(" ({} local shards are being read)", in_use)
                   : std::string()));
}

}  // namespace ferry::internal_stream
