// OpenShards: the shards a dataset holds open - mapped, validated and pinned - shared by every
// reader of it. The recently used ones stay open on purpose, so that a shuffled order hopping
// between shards does not re-open one per sample; how many is bounded in count and in bytes
// (the caller's cap: under a cache_limit, the open part of the cache budget).
//
// A shard whose file is deleted from its cache folder under the readers (a user clearing space,
// another job) is dropped once Watch has been told its path and NoticeDeletions hears of it:
// marked `deleted`, so that the readers holding it drop it too and fetch the shard again when
// they next read it - as Mosaic Streaming does, which reads each sample from the file - rather
// than read on from a mapping of a file that is gone, which no one would ever fetch again
// (src/cache/deletion_watch.h). The readers drain the kernel's queue of deletions now and then
// (DrainDeletions: a system call of a few hundred nanoseconds; DrainEvery says how often an
// iterator does). Best effort: a deletion while the shard is being opened is not heard, and that
// shard is read from its mapping until it leaves the open set.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/mutex.h"
#include "cache/deletion_watch.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/shard_reader.h"
#include "stream/prefetcher.h"

namespace ferry::internal_stream {

// A local shard, pinned and mapped, shared by every sample read from it.
struct OpenShard {
  // Spelled out because clang (the fuzz build) lacks C++20's parenthesized aggregate init.
  OpenShard(ShardHandle h, std::unique_ptr<const ShardReader> r)
      : handle(std::move(h)), reader(std::move(r)) {}

  ShardHandle handle;
  std::unique_ptr<const ShardReader> reader;  // never null
  // Its file was deleted from the cache folder: the readers holding it drop it and fetch the
  // shard again.
  mutable std::atomic<bool> deleted{false};
};

class OpenShards {
 public:
  static constexpr size_t kRecentShards = 256;

  /// The open shard `key`, if one is open (among the recent ones, or held by a reader).
  std::shared_ptr<const OpenShard> Find(const ShardKey& key);

  /// Adds `shard` (of `bytes` raw bytes) as the most recently used, then forgets the least
  /// recently used ones past kRecentShards or `byte_cap` bytes (always keeping one).
  void Add(const ShardKey& key, std::shared_ptr<const OpenShard> shard, uint64_t bytes,
           uint64_t byte_cap);

  /// Forgets `key` (its pin goes with the last reader holding it); `deleted`: its file is gone,
  /// and the readers holding it drop it too.
  void Drop(const ShardKey& key, bool deleted);

  /// From now on, hears of the deletion of each of `files` (raw file path -> shard). Once; later
  /// calls do nothing. Says at debug level why when it cannot watch.
  void Watch(const std::unordered_map<std::string, ShardKey>& files);

  /// Drops the shards whose files were deleted since the last drain.
  void DrainDeletions();
  /// DrainDeletions, at most every 20 us (a clock read otherwise): for random access.
  void NoticeDeletions();

 private:
  void DropLocked(const ShardKey& key, bool deleted) REQUIRES(mu_);
  void OnDeleted(const std::filesystem::path& path);

  Mutex mu_;
  std::map<ShardKey, std::weak_ptr<const OpenShard>> open_ GUARDED_BY(mu_);
  // Recently used open shards, most recent first, kept open on purpose, with their bytes.
  struct Recent {
    ShardKey key;
    std::shared_ptr<const OpenShard> shard;
    uint64_t bytes = 0;
  };
  std::list<Recent> recent_ GUARDED_BY(mu_);
  std::map<ShardKey, std::list<Recent>::iterator> recent_index_ GUARDED_BY(mu_);
  uint64_t recent_bytes_ GUARDED_BY(mu_) = 0;

  std::once_flag watch_once_;
  std::unordered_map<std::string, ShardKey> files_;       // set once, before watching_
  std::unique_ptr<internal_cache::DeletionWatch> watch_;  // set once, before watching_
  std::atomic<bool> watching_{false};
  std::atomic<int64_t> next_drain_ns_{0};  // steady clock
};

/// When an iterator drains the deletions: every `every()` samples, so that drains come about
/// every 20 to 80 us of its time - under 1 % of a reader that does nothing else, however fast
/// its samples come (a clock read per sample would cost more than the drains) - and at every
/// sample of a young iterator, doubling from there.
class DrainEvery {
 public:
  /// True when this sample's turn has come.
  bool Due() {
    if (until_ > 0) {
      --until_;
      return false;
    }
    const auto now = std::chrono::steady_clock::now();
    const auto elapsed = now - last_;
    if (elapsed < std::chrono::microseconds(20)) {
      every_ = std::min<uint32_t>(every_ * 2, 1u << 16);
    } else if (elapsed > std::chrono::microseconds(80) && every_ > 1) {
      every_ /= 2;
    }
    last_ = now;
    until_ = every_ - 1;
    return true;
  }
  uint32_t every() const { return every_; }

 private:
  uint32_t every_ = 1;
  uint32_t until_ = 0;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace ferry::internal_stream
