// ShardCache over a cache folder shared by processes: the protocol is in
// include/ferry/cache/shard_cache.h; the pieces are here:
//   cache_layout   where shard files, temporaries and lock files live
//   file_lock      flock() on those lock files
//   shard_downloader  one shard: download, decompress, hash check, rename
//   eviction       cache_limit: which shards go and how
//
// Acquire in order (remote dataset):
//   1. shared use-lock of the shard (the pin), stamped with the time (its last use, for LRU);
//   2. raw file there -> a hit;
//   3. else the shard's download lock, exclusive; look again (another process may have
//      downloaded it while we waited - each shard is downloaded once); Fetch, which evicts
//      through MakeRoomFor before it downloads; release the download lock.
// The pin is held from step 1 on, so no eviction can delete what step 2 or 3 found, and it passes
// to the ShardHandle.
//
// Thread-safety: the cache's own state is the index and options (immutable) and the upcoming
// order (behind a mutex); everything shared with other threads and processes goes through the
// lock files.
#include "ferry/cache/shard_cache.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <system_error>
#include <utility>
#include <vector>

#include "base/file_util.h"
#include "base/human_size.h"
#include "base/log.h"
#include "base/mutex.h"
#include "cache/cache_layout.h"
#include "cache/cache_metrics.h"
#include "cache/cached_copy.h"
#include "cache/download_slots.h"
#include "cache/eviction.h"
#include "cache/file_lock.h"
#include "cache/part_tuner.h"
#include "cache/shard_downloader.h"
#include "ferry/format/local_dataset.h"
#include "ferry/metrics/node_metrics.h"
#include "ferry/metrics/prometheus.h"
#include "format/hash.h"
#include "storage/http/http_types.h"

namespace ferry {

namespace fs = std::filesystem;

using internal_cache::CachedCopy;
using internal_cache::CacheLayout;
using internal_cache::CacheMetrics;
using internal_cache::ExamineShard;
using internal_cache::FileLock;
using internal_cache::LockMode;
using internal_cache::ShardDownloader;

namespace {

// Unpins in the process that pinned; a forked copy of the descriptor is only closed.
void Unpin(int fd, int pid) {
  if (fd < 0) return;
  if (pid == ::getpid()) {
    internal_cache::UnlockAndClose(fd);
  } else {
    ::close(fd);
  }
}

}  // namespace

ShardHandle::ShardHandle(ShardHandle&& other) noexcept
    : shard_(other.shard_),
      path_(std::move(other.path_)),
      pin_fd_(std::exchange(other.pin_fd_, -1)),
      pin_pid_(other.pin_pid_),
      was_cached_(other.was_cached_) {}

ShardHandle& ShardHandle::operator=(ShardHandle&& other) noexcept {
  if (this != &other) {
    Unpin(std::exchange(pin_fd_, -1), pin_pid_);
    shard_ = other.shard_;
    path_ = std::move(other.path_);
    pin_fd_ = std::exchange(other.pin_fd_, -1);
    pin_pid_ = other.pin_pid_;
    was_cached_ = other.was_cached_;
  }
  return *this;
}

ShardHandle::~ShardHandle() { Unpin(pin_fd_, pin_pid_); }

ShardHandle ShardCache::MakeHandle(size_t shard, fs::path path, int pin_fd, bool was_cached) {
  ShardHandle handle;
  handle.shard_ = shard;
  handle.path_ = std::move(path);
  handle.pin_fd_ = pin_fd;
  handle.pin_pid_ = ::getpid();
  handle.was_cached_ = was_cached;
  return handle;
}

namespace {

// Adds the time since construction to a counter (wait_ns, slot_wait_ns) when it goes out of
// scope.
class WaitTimer {
 public:
  explicit WaitTimer(metrics::Counter& counter = CacheMetrics::Get().wait_ns)
      : counter_(counter), start_(std::chrono::steady_clock::now()) {}
  ~WaitTimer() {
    counter_.Add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now() - start_)
                                           .count()));
  }
  WaitTimer(const WaitTimer&) = delete;
  WaitTimer& operator=(const WaitTimer&) = delete;

 private:
  metrics::Counter& counter_;
  std::chrono::steady_clock::time_point start_;
};

class ShardCacheImpl final : public ShardCache {
 public:
  ShardCacheImpl(std::shared_ptr<ObjectStore> remote, std::string remote_prefix,
                 std::shared_ptr<const DatasetDescription> index, ShardCacheOptions options,
                 std::unique_ptr<internal_cache::DownloadSlots> slots, uint64_t other_bytes,
                 metrics::NodePublication publication)
      : remote_(remote),
        slots_(std::move(slots)),
        other_bytes_(other_bytes),
        index_(std::move(index)),
        options_(std::move(options)),
        layout_(options_.local),
        tuner_(options_.download_parts ? nullptr : std::make_unique<internal_cache::PartTuner>()),
        downloader_(std::move(remote), std::move(remote_prefix), layout_,
                    {.keep_zip = options_.keep_zip,
                     .keep_zip_of = options_.keep_zip_of,
                     .validate_hash = options_.validate_hash,
                     .parts = {.parallel_part_threshold = options_.parallel_part_threshold,
                               .download_parts = options_.download_parts.value_or(1),
                               .tuner = tuner_.get()},
                     .digest_records = options_.digest_records,
                     .store_checksums = options_.store_checksums}),
        publication_(std::move(publication)) {}

  const DatasetDescription& index() const override { return *index_; }

  Result<ShardHandle> Acquire(size_t k, std::stop_token stop) override {
    FERRY_ASSIGN_OR_RETURN(std::optional<ShardHandle> handle, AcquireShard(k, stop, true));
    return std::move(*handle);
  }

  Status Prepare(size_t k, bool blocking, std::stop_token stop) override {
    return AcquireShard(k, stop, blocking).status();
  }

  Result<uint64_t> Evict(size_t k) override {
    if (k >= index_->shards.size()) {
      return OutOfRangeError(fmt::format("{}: shard {} asked for; the index lists {}",
                                         layout_.root().string(), k, index_->shards.size()));
    }
    const fs::path raw = layout_.FilePath(index_->shards[k].raw_data.basename);
    if (!remote_) {
      return FailedPreconditionError(
          fmt::format("{}: not evicted: the dataset has no remote, so its files are the only copy",
                      raw.string()));
    }
    FERRY_ASSIGN_OR_RETURN(const internal_cache::EvictResult evicted,
                           internal_cache::EvictShard(layout_, *index_, k));
    if (evicted.pinned) {
      return FailedPreconditionError(fmt::format(
          "{}: not evicted: a reader (an iterator of this process, or another process on the "
          "node) is reading it",
          raw.string()));
    }
    return evicted.freed;
  }

  std::vector<std::pair<size_t, int64_t>> LocalShards() const override {
    std::vector<std::pair<size_t, int64_t>> out;
    for (const auto& c : internal_cache::LocalShards(layout_, *index_)) {
      out.emplace_back(c.shard, c.last_use_ns);
    }
    return out;
  }

  uint64_t OtherBytes() const override { return other_bytes_; }

  bool IsLocal(size_t k) const override {
    if (k >= index_->shards.size()) return false;
    // An unverified file is most likely whole: reading it is no reason to fetch it first.
    const CachedCopy copy = ExamineShard(layout_, index_->shards[k], /*verify=*/false);
    return copy.complete || copy.unverified;
  }

  void SetUpcoming(const void* reader, std::vector<size_t> shards) override {
    // Only kept here: what eviction makes of the lists is computed when a download needs room.
    auto list = std::make_shared<const std::vector<size_t>>(std::move(shards));
    MutexLock lock(mu_);
    if (list->empty()) {
      upcoming_.erase(reader);
    } else {
      upcoming_[reader] = std::move(list);
    }
  }

  uint64_t DiskUsage() const override { return internal_cache::MeasureDiskUsage(layout_, *index_); }

 private:
  // Acquire; with `wait_for_others` false, nullopt at once when another thread or process is
  // downloading the shard (Prepare's non-blocking form).
  Result<std::optional<ShardHandle>> AcquireShard(size_t k, std::stop_token stop,
                                                  bool wait_for_others) {
    if (k >= index_->shards.size()) {
      return OutOfRangeError(fmt::format("{}: shard {} asked for; the index lists {}",
                                         layout_.root().string(), k, index_->shards.size()));
    }
    if (!remote_) {
      FERRY_ASSIGN_OR_RETURN(ShardHandle local, AcquireLocal(k));
      return std::optional<ShardHandle>(std::move(local));
    }
    const ShardDescription& shard = index_->shards[k];
    const fs::path raw = layout_.FilePath(shard.raw_data.basename);
    auto pinned =
        FileLock::Lock(layout_.UseLockPath(shard.raw_data.basename), LockMode::kShared, stop);
    if (!pinned && pinned.error().code() == StatusCode::kNotFound) {
      // The folder was deleted while open (a user clearing the cache): start it again, as a
      // fresh open would.
      FERRY_RETURN_IF_ERROR(layout_.CreateLocksDir());
      pinned =
          FileLock::Lock(layout_.UseLockPath(shard.raw_data.basename), LockMode::kShared, stop);
    }
    FERRY_ASSIGN_OR_RETURN(FileLock pin, std::move(pinned));
    if (Status s = internal_cache::StampLastUse(pin.fd()); !s.ok()) {
      Log().debug("cache: {}: {}", shard.raw_data.basename, s.message());  // LRU gets coarser
    }
    CacheMetrics& metrics = CacheMetrics::Get();
    const CachedCopy seen = ExamineShard(layout_, shard, /*verify=*/false);
    if (seen.complete) {
      metrics.hits.Add();
      return std::optional<ShardHandle>(MakeHandle(k, raw, pin.Release(), /*was_cached=*/true));
    }
    // A caller that has already been told to stop wants the shard only if it is local.
    if (stop.stop_requested()) {
      return CancelledError(
          fmt::format("{}: not local, and stopped before its download", raw.string()));
    }
    if (!seen.unverified) metrics.misses.Add();
    {
      WaitTimer timer;
      const fs::path lock_path = layout_.DownloadLockPath(shard.raw_data.basename);
      std::optional<FileLock> download;
      if (wait_for_others) {
        FERRY_ASSIGN_OR_RETURN(download, FileLock::Lock(lock_path, LockMode::kExclusive, stop));
      } else {
        FERRY_ASSIGN_OR_RETURN(download, FileLock::TryLock(lock_path, LockMode::kExclusive));
        if (!download) return std::optional<ShardHandle>();  // someone else is fetching it
      }
      // Whoever held the lock before us may have downloaded (or verified) it. A file from
      // before the boot is verified here, once, under the lock.
      if (const CachedCopy copy = ExamineShard(layout_, shard, /*verify=*/true); !copy.complete) {
        if (seen.unverified) metrics.misses.Add();
        if (!copy.damage.empty()) {
          // Replaced by the rename that publishes the download; readers of it cannot exist (it
          // never passed these checks).
          Log().warn("cache: {}: downloading it again", copy.damage);
          metrics.damaged_copies.Add();
        }
        std::optional<FileLock> slot;
        if (slots_) {
          WaitTimer slot_wait(CacheMetrics::Get().slot_wait_ns);
          FERRY_ASSIGN_OR_RETURN(slot, slots_->Take(stop));
        }
        FERRY_RETURN_IF_ERROR(FetchOnAFullDisk(k, stop));
      } else if (seen.unverified) {
        // Verified: it was there all along.
        metrics.hits.Add();
        return std::optional<ShardHandle>(MakeHandle(k, raw, pin.Release(), /*was_cached=*/true));
      }
    }
    return std::optional<ShardHandle>(MakeHandle(k, raw, pin.Release(), /*was_cached=*/false));
  }

  // A dataset already local: read in place; a shard present only compressed is decompressed
  // beside it (under the download lock, so once); nothing is ever evicted or deleted.
  Result<ShardHandle> AcquireLocal(size_t k) {
    const ShardDescription& shard = index_->shards[k];
    const fs::path raw = layout_.FilePath(shard.raw_data.basename);
    // Pin only where a cache with a remote may share the folder (it has our locks folder):
    // a plain dataset folder, maybe read-only, gets no .ferry/ just for being read. Nothing here
    // evicts, so a pin that cannot be taken (a read-only folder) is no reason to fail.
    std::optional<FileLock> pin;
    std::error_code ec;
    if (fs::is_directory(layout_.LocksDir(), ec)) {
      auto locked = FileLock::Lock(layout_.UseLockPath(shard.raw_data.basename), LockMode::kShared);
      if (locked) {
        pin = std::move(*locked);
      } else {
        Log().debug("cache: reading {} unpinned: {}", raw.string(), locked.error().message());
      }
    }
    auto handle = [&](bool was_cached) {
      return MakeHandle(k, raw, pin ? pin->Release() : -1, was_cached);
    };
    CacheMetrics& metrics = CacheMetrics::Get();
    const auto all_there = [&] {
      for (const ShardFile& file : shard.files()) {
        if (!IsRegularFile(layout_.FilePath(file.raw->basename))) return false;
      }
      return true;
    };
    if (all_there()) {
      metrics.hits.Add();
      return handle(true);
    }
    if (!shard.zip_data) {
      for (const ShardFile& file : shard.files()) {
        const fs::path path = layout_.FilePath(file.raw->basename);
        if (!IsRegularFile(path)) {
          return NotFoundError(
              fmt::format("{}: shard {} of the local dataset is missing", path.string(), k));
        }
      }
    }
    metrics.misses.Add();
    {
      WaitTimer timer;
      FERRY_RETURN_IF_ERROR(layout_.CreateLocksDir());
      FERRY_ASSIGN_OR_RETURN(
          FileLock decompress,
          FileLock::Lock(layout_.DownloadLockPath(shard.raw_data.basename), LockMode::kExclusive));
      if (!all_there()) {
        FERRY_RETURN_IF_ERROR(downloader_.Fetch(shard, [](uint64_t) { return Status::Ok(); }));
      }
    }
    return handle(false);
  }

  // Fetches shard `k` (its download lock held). A disk that fills (ENOSPC, EDQUOT) while it
  // downloads - the cache_limit is above what the disk holds, or unset, or others fill the disk
  // - gets what the schedule allows evicted to make room on the disk, and the download is tried
  // once more; if that cannot be, the error names the folder, the free space and the
  // cache_limit that would keep the folder within the disk. Nothing partial is left either way
  // (the downloader removes its temporaries).
  Status FetchOnAFullDisk(size_t k, std::stop_token stop) {
    const ShardDescription& shard = index_->shards[k];
    const auto make_room = [&](uint64_t bytes) { return MakeRoomFor(k, bytes); };
    Status status = downloader_.Fetch(shard, make_room, stop);
    if (!IsDiskFullError(status)) return status;
    uint64_t needed = 0;
    for (const ShardFile& file : shard.files()) {
      needed += file.raw->bytes + (file.zip ? file.zip->bytes : 0);
    }
    // What killed downloads left goes first; what live ones write counts as taken, as MakeRoom
    // counts it.
    uint64_t shard_bytes = internal_cache::SweepTemporaries(layout_, *index_, k) +
                           internal_cache::MeasureDiskUsage(layout_, *index_);
    auto space = MeasureDiskSpace(layout_.root());
    if (space) {
      // The shards may take what they take now plus what is free.
      auto room = internal_cache::MakeRoom(
          layout_, *index_, UpcomingNow(),
          {.limit = shard_bytes + space->free_bytes, .needed = needed, .for_shard = k});
      if (room) shard_bytes = room->used_after;
      if (room && room->evicted_bytes > 0) {
        Log().warn("cache: {}: the disk is full ({} free): evicted {} of shards to fetch {}",
                   layout_.root().string(), FormatBytes(space->free_bytes),
                   FormatBytes(room->evicted_bytes), shard.raw_data.basename);
        status = downloader_.Fetch(shard, make_room, stop);
        if (!IsDiskFullError(status)) return status;
        space = MeasureDiskSpace(layout_.root());
      }
    }
    const uint64_t folder = shard_bytes + OtherBytesNow();
    return ResourceExhaustedError(fmt::format(
        "{}: the disk is full fetching {} ({} at most){}: {}; nothing more may be evicted (the "
        "shards left are in use or needed sooner). A cache_limit of at most {} keeps the folder "
        "within the disk (it holds {} now)",
        layout_.root().string(), shard.raw_data.basename, FormatBytes(needed),
        space ? fmt::format(", {} free of {}", FormatBytes(space->free_bytes),
                            FormatBytes(space->total_bytes))
              : std::string(),
        status.message(), FormatBytes(folder + (space ? space->free_bytes : 0)),
        FormatBytes(folder)));
  }

  // Each shard's soonest position in any reader's upcoming list (eviction's order).
  std::vector<size_t> UpcomingNow() {
    std::vector<std::shared_ptr<const std::vector<size_t>>> lists;
    {
      MutexLock lock(mu_);
      for (const auto& [reader, list] : upcoming_) lists.push_back(list);
    }
    std::vector<std::span<const size_t>> spans;
    for (const auto& list : lists) spans.emplace_back(*list);
    return internal_cache::UpcomingPositions(spans, index_->shards.size());
  }

  // ferry's records beside the shards as they are now: each process that starts or stops
  // reading the folder adds or removes its metrics file. Measured again only when the metrics
  // folder has changed since (one stat per download rather than a listing and six stats: a
  // FileDataset downloads thousands of small files a second).
  uint64_t OtherBytesNow() {
    struct stat st {};
    const int64_t changed =
        ::stat(layout_.MetricsDir().c_str(), &st) == 0
            ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec
            : -1;
    if (changed != metrics_changed_ns_.load(std::memory_order_relaxed)) {
      // Stored before measuring: a change while measuring is measured again next time. A file
      // time ticks coarsely (a few ms): a change within 50 ms of the last may not move it, so
      // such a recent time is not trusted and the next download measures again.
      const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      metrics_changed_ns_.store(now - changed < 50'000'000 ? -2 : changed,
                                std::memory_order_relaxed);
      other_bytes_now_.store(internal_cache::MeasureOtherBytes(layout_), std::memory_order_relaxed);
    }
    return std::max(other_bytes_, other_bytes_now_.load(std::memory_order_relaxed));
  }

  // Evicts until `bytes` more fit under cache_limit; goes over it when the rest is pinned.
  Status MakeRoomFor(size_t k, uint64_t bytes) {
    if (!options_.cache_limit) return Status::Ok();
    const std::vector<size_t> positions = UpcomingNow();
    // The shards get what index.json and ferry's records leave of the limit.
    const uint64_t other_bytes = OtherBytesNow();
    const uint64_t shard_room =
        *options_.cache_limit - std::min(*options_.cache_limit, other_bytes);
    FERRY_ASSIGN_OR_RETURN(const internal_cache::RoomResult room,
                           internal_cache::MakeRoom(layout_, *index_, positions,
                                                    {.limit = shard_room,
                                                     .needed = bytes,
                                                     .for_shard = k,
                                                     .headroom = options_.eviction_headroom}));
    if (!room.fits) {
      // Said once loudly: with a limit below what the readers pin at once it would say it on
      // every download.
      const std::string message = fmt::format(
          "cache: {}: going over cache_limit ({} bytes) to fetch {} ({} bytes at most): {}",
          layout_.root().string(), *options_.cache_limit, index_->shards[k].raw_data.basename,
          bytes,
          room.used_after == 0
              ? fmt::format("it is larger than what the limit leaves beside index.json and "
                            "ferry's records ({} bytes)",
                            other_bytes)
              : fmt::format("the {} bytes of shards left are all in use", room.used_after));
      if (!warned_over_limit_.exchange(true)) {
        Log().warn("{}", message);
      } else {
        Log().debug("{}", message);
      }
    }
    return Status::Ok();
  }

  const std::shared_ptr<ObjectStore> remote_;
  const std::unique_ptr<internal_cache::DownloadSlots> slots_;  // node_download_concurrency
  const uint64_t other_bytes_;                                  // OtherBytes()
  const std::shared_ptr<const DatasetDescription> index_;       // never null
  const ShardCacheOptions options_;
  const CacheLayout layout_;
  const std::unique_ptr<internal_cache::PartTuner> tuner_;  // null when download_parts is set
  const ShardDownloader downloader_;
  std::atomic<bool> warned_over_limit_{false};
  std::atomic<int64_t> metrics_changed_ns_{-2};  // the metrics folder's mtime when last measured
  std::atomic<uint64_t> other_bytes_now_{0};
  const metrics::NodePublication publication_;  // this process's counters, seen node-wide

  Mutex mu_;
  // Each reader's upcoming shards, soonest first.
  std::map<const void*, std::shared_ptr<const std::vector<size_t>>> upcoming_ GUARDED_BY(mu_);
};

Status CheckIndexFitsCache(const DatasetDescription& index, const ShardCacheOptions& options) {
  for (const ShardDescription& shard : index.shards) {
    for (const FileInfo* form : shard.all_forms()) {
      // Indexes built by hand skip ParseIndex: nothing may name a file outside the folder.
      FERRY_RETURN_IF_ERROR(ValidateBasename(form->basename));
      FERRY_RETURN_IF_ERROR(internal_cache::CheckBasenameIsNotReserved(form->basename));
    }
  }
  if (!options.validate_hash) return Status::Ok();
  const std::string& algorithm = *options.validate_hash;
  if (!IsKnownHash(algorithm)) {
    return InvalidArgumentError(fmt::format("{}: validate_hash {} is not a known hash algorithm",
                                            options.local.string(), algorithm));
  }
  // The file checked is the one fetched: the compressed one when there is one (as Mosaic does).
  for (const ShardDescription& shard : index.shards) {
    for (const ShardFile& stored : shard.files()) {
      const FileInfo& file = stored.zip ? *stored.zip : *stored.raw;
      if (file.FindHash(algorithm) == nullptr) {
        std::vector<std::string> listed;
        for (const auto& [name, digest] : file.hashes) listed.push_back(name);
        return InvalidArgumentError(fmt::format(
            "{}: validate_hash {} is not among the digests index.json gives for it ({})",
            file.basename, algorithm,
            listed.empty() ? "none" : fmt::format("{}", fmt::join(listed, ", "))));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ShardCache>> ShardCache::Open(std::shared_ptr<ObjectStore> remote,
                                                     std::string remote_prefix,
                                                     DatasetDescription index,
                                                     ShardCacheOptions options) {
  return Open(std::move(remote), std::move(remote_prefix),
              std::make_shared<const DatasetDescription>(std::move(index)), std::move(options));
}

Result<std::unique_ptr<ShardCache>> ShardCache::Open(
    std::shared_ptr<ObjectStore> remote, std::string remote_prefix,
    std::shared_ptr<const DatasetDescription> shared_index, ShardCacheOptions options) {
  const DatasetDescription& index = *shared_index;
  if (options.local.empty()) {
    return InvalidArgumentError("shard cache: `local` (the cache folder) is empty");
  }
  if (options.download_parts) {
    FERRY_RETURN_IF_ERROR(internal_cache::CheckDownloadParts(*options.download_parts)
                              .WithContext(options.local.string()));
  }
  FERRY_RETURN_IF_ERROR(CheckIndexFitsCache(index, options));
  const CacheLayout layout(options.local);
  std::error_code ec;
  if (remote) {
    // Eviction would delete the dataset itself. Checked before anything is created there.
    if (auto remote_path = remote->LocalPath(remote_prefix);
        remote_path && fs::equivalent(*remote_path, options.local, ec)) {
      return InvalidArgumentError(fmt::format(
          "{}: the cache folder is the remote dataset itself; open it without a remote to read "
          "it in place",
          options.local.string()));
    }
    FERRY_RETURN_IF_ERROR(layout.CreateLocksDir());
    // A job preempted again and again does not pile up what its killed downloads left.
    internal_cache::SweepTemporaries(layout, index);
  } else if (!fs::is_directory(options.local, ec)) {
    return NotFoundError(
        fmt::format("{}: no such folder (a dataset without a remote is read in place)",
                    options.local.string()));
  }
  std::unique_ptr<internal_cache::DownloadSlots> slots;
  if (remote && options.node_download_concurrency) {
    FERRY_ASSIGN_OR_RETURN(slots, internal_cache::DownloadSlots::Open(
                                      layout.SlotsDir(), *options.node_download_concurrency));
  }
  metrics::NodePublication publication;
  if (remote && options.cache_limit) {
    internal_cache::CacheMetrics::Get().limit_bytes.Set(static_cast<int64_t>(*options.cache_limit));
  }
  if (remote) {
    // Best effort: a folder where it cannot be published is still read.
    Status created = internal_cache::CreateCacheFolders(layout.MetricsDir());
    auto started = created.ok() ? metrics::NodePublication::Start(layout.MetricsDir(),
                                                                  internal_cache::Modes().file)
                                : Result<metrics::NodePublication>(std::move(created));
    if (started.ok()) {
      publication = std::move(*started);
    } else {
      Log().debug("cache: not publishing this process's counters: {}", started.status().ToString());
    }
  }
  // After the publication: its own file is among the bytes beside the shards.
  const uint64_t other_bytes = internal_cache::MeasureOtherBytes(layout);
  return std::unique_ptr<ShardCache>(new ShardCacheImpl(
      std::move(remote), std::move(remote_prefix), std::move(shared_index), std::move(options),
      std::move(slots), other_bytes, std::move(publication)));
}

Status ShardCache::Prepare(size_t k, bool /*blocking*/, std::stop_token stop) {
  return Acquire(k, stop).status();
}

Result<uint64_t> ShardCache::Evict(size_t k) {
  return UnimplementedError(fmt::format("shard {}: this cache does not evict on demand", k));
}

Result<metrics::NodeMetrics> ReadCacheFolderMetrics(const std::filesystem::path& local) {
  return metrics::ReadNodeMetrics(CacheLayout(local).MetricsDir(), internal_cache::Modes().file);
}

std::string CacheFoldersPrometheusText(const std::vector<std::string>& folders) {
  if (folders.empty()) return metrics::ProcessPrometheusText();
  std::vector<metrics::PrometheusSource> sources;
  std::string errors;
  for (const std::string& folder : folders) {
    auto node = ReadCacheFolderMetrics(folder);
    if (node.ok()) {
      sources.push_back(metrics::NodePrometheusSource(*node, folder));
    } else {
      errors += "# " + node.status().ToString() + "\n";
    }
  }
  return errors + metrics::PrometheusText(sources);
}

}  // namespace ferry
