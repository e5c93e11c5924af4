// CacheFolder: a cache folder looked after from outside a dataset - what `ferry cache`
// (ls, du, verify, clear, prune) does: what the folder holds and for which remote, its size
// against the limit its readers set, which processes read it now, whether its shards are still
// the bytes the index describes, and removal that is safe while readers run.
//
// Safe while readers run: a shard is removed as eviction removes one (ShardCache): under the
// folder's cache.lock, only after taking the shard's use-lock exclusively without waiting - a
// shard some reader has pinned is left, and counted as such. index.json and ferry's records
// (.ferry/) are removed only by Clear with `everything` and no live reader.
//
// Thread-safety: functions only.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/format/dataset_description.h"
#include "ferry/metrics/node_metrics.h"
#include "ferry/result.h"

namespace ferry {

struct CacheFolderInfo {
  std::filesystem::path folder;
  std::string remote;  // the remote that filled it (redacted), "" when it has no record
  size_t shards = 0;   // in its index.json
  size_t cached_shards = 0;
  uint64_t shard_bytes = 0;  // of the shard files present
  uint64_t other_bytes = 0;  // index.json and ferry's records
  uint64_t limit = 0;        // the largest cache_limit a live reader set (0: none known)
  uint32_t readers = 0;      // streaming iterators reading it now, across processes
  std::vector<metrics::ProcessMetrics> processes;  // processes reading it now
};

/// What `folder` holds. kNotFound when it does not exist; kInvalidArgument when it is no cache
/// folder (no index.json).
Result<CacheFolderInfo> InspectCacheFolder(const std::filesystem::path& folder);

/// Where a dataset without `local` caches ($TMPDIR/ferry-cache, or /tmp/ferry-cache): each
/// dataset a folder under it.
std::filesystem::path DefaultCacheRoot();

/// The cache folders directly under `root` (those with an index.json), sorted.
std::vector<std::filesystem::path> FindCacheFolders(const std::filesystem::path& root);

/// `given` when not empty, else the cache folders under DefaultCacheRoot(); kNotFound naming the
/// root when there are none (what `ferry cache` and `ferry top` look at).
Result<std::vector<std::filesystem::path>> CacheFoldersOrDefault(
    const std::vector<std::string>& given);

/// A cache folder's bytes as its cache_limit counts them - its shard files, index.json and
/// ferry's records, what `ferry cache du` shows - measured again on each Bytes() without
/// reading its index again (`ferry top`).
class CacheFolderMeter {
 public:
  /// InspectCacheFolder's errors.
  static Result<CacheFolderMeter> Open(const std::filesystem::path& folder);
  uint64_t Bytes() const;

 private:
  CacheFolderMeter(std::filesystem::path folder, std::shared_ptr<const DatasetDescription> index)
      : folder_(std::move(folder)), index_(std::move(index)) {}
  std::filesystem::path folder_;
  std::shared_ptr<const DatasetDescription> index_;
};

struct CachedShardProblem {
  std::string file;     // basename
  std::string problem;  // what is wrong: its size, its digest
};

struct CacheVerifyReport {
  size_t checked = 0;  // shard files present and checked
  size_t hashed = 0;   // of them, checked against a digest of the index
  std::vector<CachedShardProblem> problems;
  size_t removed = 0;  // with `remove_bad`: shards removed for their problems
};

/// Checks every shard file present against the index: its size, and the first digest the index
/// gives for it that ferry knows (xxh64, sha1, md5, ...). With `remove_bad`, a shard with a bad
/// file is removed (unless pinned), to be downloaded again when next read.
Result<CacheVerifyReport> VerifyCacheFolder(const std::filesystem::path& folder,
                                            bool remove_bad = false);

struct CacheRemoval {
  size_t removed_shards = 0;
  uint64_t freed_bytes = 0;
  size_t pinned_shards = 0;  // left: a reader has them pinned
};

/// Removes every shard not pinned; with `everything` and no live reader, the whole folder's
/// contents (index.json and .ferry/ included) - with a live reader it is kFailedPrecondition
/// naming the processes, and nothing is removed. (A reader that opens the folder while it is
/// being removed may fail: `everything` is for a folder no job uses.)
Result<CacheRemoval> ClearCacheFolder(const std::filesystem::path& folder, bool everything = false);

struct PruneOptions {
  std::optional<uint64_t> to_bytes;  // remove the least recently used shards until this fits
  /// Remove the shards not used for this long.
  std::optional<std::chrono::seconds> older_than;
};

/// Removes shards not pinned, least recently used first, as `options` say.
Result<CacheRemoval> PruneCacheFolder(const std::filesystem::path& folder,
                                      const PruneOptions& options);

}  // namespace ferry
