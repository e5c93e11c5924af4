// CacheLayout: where everything lives in a cache folder.
//
//   <root>/index.json                   the dataset's index (LoadIndex)
//   <root>/<basename>                   shard files (raw and compressed), as index.json names them
//   <root>/<basename>.ferry-tmp         the one temporary of a shard file being written
//   <root>/.ferry/locks/<name>.use      shared by every pin of a shard; eviction takes it exclusive
//   <root>/.ferry/locks/<name>.dl       the shard's download lock
//   <root>/.ferry/locks/<name>.xxh3     the size and digest a shard file had when written
//                                       (digest_record.h)
//   <root>/.ferry/locks/cache.lock      serializes eviction across processes
//   <root>/.ferry/readers/reader.*      one per streaming iterator reading the folder, flock'ed
//                                       while it reads (src/cache/reader_registry.h); a folder
//                                       of their own, so that counting them does not list the
//                                       two lock files of every shard
//   <root>/.ferry/metrics/proc.*     each reading process's counters (ferry/metrics/node_metrics.h)
//   <root>/.ferry/slots/<k>             download slots, 0..n-1: with node_download_concurrency n,
//                                       a download runs while it holds one (download_slots.h)
//   <root>/.ferry/origin.json           the remote the folder was filled from and the version of
//                                       its index.json that the cached copy is (cached_index.h)
//   <root>/.ferry/index.bin             index.json in binary form, which every process but the
//                                       first reads instead (src/format/binary_index.h)
//   <root>/.ferry/mirrors.json          the version of each mirror's index.json when the copies
//                                       were last found the same (src/stream/stream_mirrors.h)
//
// A shard file has exactly one temporary name, and only the holder of the shard's download lock
// writes it: whoever takes the lock next knows that a file under that name is the leftover of a
// killed download and removes it, without listing folders or guessing whether its writer lives.
//
// Lock files are flat under .ferry/locks, named after the shard's raw basename, which in a
// merged dataset holds '/' ("part_a/shard.00000.mds"): LockName escapes it reversibly, and names
// too long for one path component keep a readable prefix plus a hash of the whole basename.
//
// Thread-safety: an immutable value.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "ferry/result.h"

namespace ferry::internal_cache {

/// Who may read what ferry creates in a cache folder, from FERRY_CACHE_MODE (read once):
///   private (default)  folders 0700, files 0600: only this user (a shared node's other users
///                      cannot read the data, nor plant files or links in the folder);
///   group              folders 0770, files 0660: jobs of several users in one group share it;
///   shared             folders 0755, files 0644: everyone may read (the umask still applies).
/// Folders ferry did not create (a local dataset's, a cache folder made beforehand) are left
/// as they are.
struct CacheModes {
  unsigned folder = 0700;
  unsigned file = 0600;
};
const CacheModes& Modes();

/// Creates `folder` and its missing parents with Modes().folder (existing ones are untouched).
Status CreateCacheFolders(const std::filesystem::path& folder);

/// The folder (first component) that ferry reserves inside a cache folder.
inline constexpr std::string_view kBookkeepingFolder = ".ferry";
/// Appended to a shard file's name for its temporary.
inline constexpr std::string_view kTemporarySuffix = ".ferry-tmp";

/// A file name (one path component, at most 255 bytes) that identifies `basename`: '%', '/' and
/// '~' are escaped as %25, %2F and %7E; longer results become a prefix, '~' and the basename's
/// xxh64.
std::string LockName(std::string_view basename);

/// kInvalidArgument for a basename that would collide with ferry's own files: one inside
/// .ferry/ or one that ends like a temporary.
Status CheckBasenameIsNotReserved(std::string_view basename);

class CacheLayout {
 public:
  explicit CacheLayout(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path IndexPath() const { return root_ / "index.json"; }
  /// A shard file (raw or compressed) under its index basename.
  std::filesystem::path FilePath(std::string_view basename) const;
  /// The one temporary name of FilePath(basename), in the same folder (rename stays atomic).
  std::filesystem::path TemporaryPath(std::string_view basename) const;

  std::filesystem::path LocksDir() const;
  /// Pins of the shard whose raw basename is `basename` (shared), eviction (exclusive). Its mtime
  /// is the shard's last use.
  std::filesystem::path UseLockPath(std::string_view basename) const;
  std::filesystem::path DownloadLockPath(std::string_view basename) const;
  /// How far the download of the file `basename` in progress has landed (download_progress.h).
  std::filesystem::path ProgressPath(std::string_view basename) const;
  /// The size and digest the file `basename` had when it was written (digest_record.h).
  std::filesystem::path DigestPath(std::string_view basename) const;
  std::filesystem::path CacheLockPath() const;

  /// Creates .ferry/locks (and the root) if missing.
  Status CreateLocksDir() const;

  /// The lock files of the folder's readers (reader_registry.h).
  std::filesystem::path ReadersDir() const;
  /// Creates .ferry/readers (and the root) if missing.
  Status CreateReadersDir() const;

  /// The files of the processes that read the folder, with their counters
  /// (ferry/metrics/node_metrics.h).
  std::filesystem::path MetricsDir() const;

  /// The download slots' lock files (src/cache/download_slots.h).
  std::filesystem::path SlotsDir() const;

  /// Where the folder's remote and index version are recorded (src/cache/cached_index.h).
  std::filesystem::path OriginPath() const;
  /// The binary form of index.json (src/format/binary_index.h).
  std::filesystem::path BinaryIndexPath() const;
  /// The versions of the mirrors' copies of index.json found the same
  /// (src/stream/stream_mirrors.h).
  std::filesystem::path MirrorsPath() const;

 private:
  std::filesystem::path root_;
};

}  // namespace ferry::internal_cache
