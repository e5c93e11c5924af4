// ShardCache: the node-local cache folder of one MDS dataset (one stream), shared by every
// process on the node and by concurrent jobs.
//
// Layout: the cache folder mirrors the remote: <local>/index.json and the shard files under their
// index basenames; ferry's bookkeeping lives in <local>/.ferry/ (lock files only - no state that a
// crash could leave stale).
//
// Acquire(k) makes shard k's raw file local and pins it:
//   1. take a shared lock on the shard's use-lock (pins it: eviction needs the exclusive lock);
//   2. if the raw file is there, done (a cache hit);
//   3. else take the shard's download lock (exclusive; other processes wanting the shard wait on
//      it, so each shard is downloaded once however many ask), look again, and download: to a
//      temporary name in the cache folder, in parallel ranged parts when large; decompress if the
//      remote holds only the compressed file (`keep_zip` keeps the compressed file too); check
//      `validate_hash` if set (a mismatch deletes the file and downloads once more, then fails
//      with kDataLoss naming the shard); rename into place; release the download lock.
// Locks are flock()s on files under .ferry/locks: they vanish with the process that held them, so
// a crash never leaves a shard locked, and a temporary file left by a killed download is never
// mistaken for a shard (only a rename publishes one; the next downloader removes leftovers).
//
// cache_limit bounds the bytes of the folder across all processes: its shard files, and beside
// them index.json and ferry's own records (OtherBytes), which take their share of it. Each download
// first reserves its bytes in a usage ledger that every process shares (the folder is scanned
// only when the ledger is stale or the download does not fit), and shards that nobody has pinned
// are evicted until it fits: those this process will need furthest in the future first
// (SetUpcoming), then least recently used (by the time each was last acquired, kept in the lock
// file's mtime). A pinned shard is never evicted. Slack: room is made for each download at its
// peak (both files while a compressed shard is decompressed); a scan sees only the files
// present, so downloads in flight elsewhere during it are not counted and N concurrent
// downloads may exceed the limit by up to N - 1 times the largest shard (counted twice when
// compressed); and when the pinned shards leave no room, the download goes ahead anyway (logged)
// rather than wait - which the streaming iterators avoid by sharing what they pin among all the
// readers of the folder. docs/streaming.md states it.
//
// Without a remote (a dataset that is already local) shards are read in place and nothing is
// ever evicted or deleted: the files are the only copy.
//
// Thread-safety: all methods may be called from any thread; ShardHandle unpins on destruction.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/format/dataset_description.h"
#include "ferry/metrics/node_metrics.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry {

/// The most ranged parts per shard the cache chooses by itself (download_parts unset).
inline constexpr uint32_t kMaxAutoDownloadParts = 8;

struct ShardCacheOptions {
  std::filesystem::path local;          // the cache folder (created if missing)
  std::optional<uint64_t> cache_limit;  // bytes of the folder; nullopt = no limit
  /// Once eviction has to run, it frees this many bytes more than the download needs, so that
  /// a cache of many small files at its limit scans its folder once per batch of downloads
  /// rather than once per download (src/cache/eviction.h).
  uint64_t eviction_headroom = 0;
  bool keep_zip = false;  // keep compressed files after decompressing
  /// Keeps these compressed files too (by basename): a peer-fetch owner's, which the other
  /// nodes ask it for (src/storage/peer_store.h).
  std::function<bool(std::string_view basename)> keep_zip_of;
  std::optional<std::string> validate_hash;  // e.g. "xxh64": check downloads against the index
  /// Shards at least this big are fetched as several ranged parts at once: `download_parts` of
  /// them, or (nullopt) as many as the rates of past downloads say pay off, 1 to
  /// kMaxAutoDownloadParts (src/cache/part_tuner.h).
  uint64_t parallel_part_threshold = uint64_t{32} << 20;
  std::optional<uint32_t> download_parts;
  /// Downloads at once from this folder, across every thread and process on the node that
  /// opens it with the same value (flock'ed slots, src/cache/download_slots.h); nullopt: no
  /// limit beyond each reader's own.
  std::optional<uint32_t> node_download_concurrency;
  /// Keep each downloaded shard file's size and XXH3 in a digest record, so that a file from
  /// before a reboot is checked exactly on its first use after it (src/cache/digest_record.h).
  /// Off: such files get only the size and hole checks.
  bool digest_records = true;
  /// Check each download against the checksum the store sends with it for free - S3's
  /// x-amz-checksum-* or an ETag that is an MD5, GCS's x-goog-hash, Azure's Content-MD5
  /// (src/storage/http/store_checksum.h) - and fetch it again on a mismatch.
  bool store_checksums = true;
};

/// A pinned, complete, local raw shard. Movable; unpins when destroyed.
class ShardHandle {
 public:
  ShardHandle() = default;
  ShardHandle(ShardHandle&&) noexcept;
  ShardHandle& operator=(ShardHandle&&) noexcept;
  ~ShardHandle();

  size_t shard() const { return shard_; }
  const std::filesystem::path& path() const { return path_; }
  /// True when this Acquire found the shard already local.
  bool was_cached() const { return was_cached_; }

 private:
  friend class ShardCache;
  size_t shard_ = 0;
  std::filesystem::path path_;
  int pin_fd_ = -1;  // holds the shared use-lock
  // The process that took the pin. A fork()ed child (a torch DataLoader worker) inherits the
  // descriptor, and the lock belongs to the shared open file: only the owner may release it, or
  // a child dropping its copy would unpin the parent's shard.
  int pin_pid_ = 0;
  bool was_cached_ = false;
};

class ShardCache {
 public:
  /// `remote` is where the dataset lives (store + prefix of its index folder), or nullptr when
  /// the dataset is local already (then `options.local` is that folder).
  static Result<std::unique_ptr<ShardCache>> Open(std::shared_ptr<ObjectStore> remote,
                                                  std::string remote_prefix,
                                                  DatasetDescription index,
                                                  ShardCacheOptions options);
  /// The same, sharing `index` with the caller (who then keeps no copy of its own).
  static Result<std::unique_ptr<ShardCache>> Open(std::shared_ptr<ObjectStore> remote,
                                                  std::string remote_prefix,
                                                  std::shared_ptr<const DatasetDescription> index,
                                                  ShardCacheOptions options);
  virtual ~ShardCache() = default;

  virtual const DatasetDescription& index() const = 0;

  /// Makes shard `k` local and pins it (see the file comment). Blocks until it is - or, once
  /// `stop` is requested, returns kCancelled soon: a wait for another process's download ends,
  /// and a download of our own stops at its next bytes and publishes nothing.
  virtual Result<ShardHandle> Acquire(size_t k, std::stop_token stop) = 0;
  Result<ShardHandle> Acquire(size_t k) { return Acquire(k, std::stop_token()); }

  /// True when shard `k`'s raw file is in the cache now (no download needed).
  virtual bool IsLocal(size_t k) const = 0;

  /// The shards `reader` (any identity: an iterator of this process) will read next, soonest
  /// first, replacing what it said before; an empty list forgets it. Eviction keeps the shards
  /// that any reader needs soonest longest, and never evicts one needed sooner than the shard
  /// it is making room for.
  virtual void SetUpcoming(const void* reader, std::vector<size_t> shards) = 0;
  void SetUpcoming(std::vector<size_t> shards) { SetUpcoming(nullptr, std::move(shards)); }

  /// Bytes of shard files in the cache folder now.
  virtual uint64_t DiskUsage() const = 0;

  /// Bytes of the folder's other files that cache_limit holds too, as they were at Open:
  /// index.json, the record of the remote and the usage ledger (eviction keeps the shard files
  /// within cache_limit minus these).
  virtual uint64_t OtherBytes() const { return 0; }

  /// Makes shard `k` local now (as Acquire, then unpinned), stamping its last use. With
  /// `blocking` false, a download of it that another thread or process is running is not
  /// waited for: it returns at once. (By default: Acquire, which always waits.)
  virtual Status Prepare(size_t k, bool blocking, std::stop_token stop = {});

  /// Deletes shard `k`'s files (raw and zip) now, as eviction does, and returns the bytes freed
  /// (0 when none was there). kFailedPrecondition, deleting nothing, when a reader has it pinned
  /// or the dataset has no remote (its files are the only copy).
  virtual Result<uint64_t> Evict(size_t k);

  /// The shards with a file in the folder, each with the time of its last use (ns since the
  /// Unix epoch; from any process): what an LRU eviction would choose from.
  virtual std::vector<std::pair<size_t, int64_t>> LocalShards() const { return {}; }

 protected:
  ShardCache() = default;
  /// For implementations (ShardHandle's fields are private to ShardCache, and friendship is not
  /// inherited): a handle of shard `shard` at `path` that owns `pin_fd`, a descriptor holding the
  /// shared use-lock (or -1 when nothing needs pinning).
  static ShardHandle MakeHandle(size_t shard, std::filesystem::path path, int pin_fd,
                                bool was_cached);
};

struct LoadIndexOptions {
  /// Use the cache's copy of index.json without asking the remote whether it changed: a cache
  /// filled earlier stays usable while the remote cannot be reached (shards it lacks are still
  /// fetched from the remote).
  bool offline = false;
  /// A remote folder of WebDataset tars without index.json is listed, and each shard read once
  /// to count its samples (src/cache/tar_shard_list.h): a plain tar through a ShardCache on
  /// these options (`local` is the cache folder), so that it stays cached for the epoch that
  /// follows; `tar_scan_jobs` shards at a time.
  ShardCacheOptions tar_scan;
  uint32_t tar_scan_jobs = 8;
  /// Only these tars of the folder, in this order (a shard pattern's names,
  /// src/format/shard_pattern.h), listed and read as above; the folder's index.json, if any, is
  /// not read.
  std::vector<std::string> tar_names;
  /// The version of the remote's index.json when the caller knows it and the store would not
  /// tell: a MirrorStore's reads report none, and the mirrors' copies are checked at open
  /// (src/stream/stream_mirrors.h). Used instead of a HEAD, and recorded with a fetched copy.
  std::string index_version;
};

/// The index.json of the dataset at `remote_prefix` in `remote`, kept in step in the cache folder
/// `local` (src/cache/cached_index.h): the folder records which remote filled it, and another
/// remote is kFailedPrecondition naming both; the cached copy is revalidated against the remote's
/// (its etag, or its modification time) - one HEAD when unchanged - and a changed index replaces
/// it, dropping the cached shards it no longer describes. A new index is fetched by one process
/// of the node at a time (under the folder's cache.lock), and every process but the one that
/// parsed it reads its binary form (.ferry/index.bin). A remote folder of WebDataset tars
/// without index.json gets a shard list made by reading each tar once, kept in `local` while the
/// folder's listing stays the same (src/cache/cached_index.h). No index.json and no tars at the
/// remote is kNotFound saying how to read a folder of files instead. Without a remote, reads
/// `local`/index.json.
Result<DatasetDescription> LoadIndex(ObjectStore* remote, const std::string& remote_prefix,
                                     const std::filesystem::path& local,
                                     const LoadIndexOptions& options = {});

/// The counters and gauges of every process reading the cache folder `local`, summed
/// (ferry/metrics/node_metrics.h); the counters of those that exited included.
Result<metrics::NodeMetrics> ReadCacheFolderMetrics(const std::filesystem::path& local);

/// What a Prometheus scrape gets (ferry/metrics/prometheus.h): the node-wide sums of each cache
/// folder in `folders`, labelled folder="..." - a folder that cannot be read is a "# " comment
/// line naming why - or, with no folder, this process's own.
std::string CacheFoldersPrometheusText(const std::vector<std::string>& folders);

}  // namespace ferry
