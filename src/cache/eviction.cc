#include "cache/eviction.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/file_util.h"
#include "base/log.h"
#include "cache/cache_metrics.h"
#include "cache/digest_record.h"
#include "cache/file_lock.h"
#include "ferry/metrics/node_metrics.h"
#include "metrics/metrics_file.h"

namespace ferry::internal_cache {
namespace {

struct FileState {
  bool exists = false;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

FileState StatFile(const std::filesystem::path& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  return {.exists = true,
          .bytes = static_cast<uint64_t>(st.st_size),
          .mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// Deletes one shard file; returns the bytes freed (0 when it was not there or would not go).
uint64_t RemoveFile(const std::filesystem::path& path) {
  const FileState state = StatFile(path);
  if (!state.exists) return 0;
  if (::unlink(path.c_str()) != 0) {
    if (errno != ENOENT) {
      Log().warn("cache: cannot evict {}", ErrnoToStatus(errno, "unlink", path).message());
    }
    return 0;
  }
  return state.bytes;
}

}  // namespace

std::vector<size_t> UpcomingPositions(std::span<const size_t> upcoming, size_t num_shards) {
  return UpcomingPositions(std::span<const std::span<const size_t>>(&upcoming, 1), num_shards);
}

std::vector<size_t> UpcomingPositions(std::span<const std::span<const size_t>> lists,
                                      size_t num_shards) {
  std::vector<size_t> position(num_shards, kNotUpcoming);
  for (const std::span<const size_t> upcoming : lists) {
    for (size_t i = 0; i < upcoming.size(); ++i) {
      const size_t shard = upcoming[i];
      if (shard < num_shards) position[shard] = std::min(position[shard], i);
    }
  }
  return position;
}

void OrderVictims(std::vector<EvictionCandidate>& candidates,
                  std::span<const size_t> upcoming_position) {
  auto position = [&](size_t shard) {
    return shard < upcoming_position.size() ? upcoming_position[shard] : kNotUpcoming;
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](const EvictionCandidate& a, const EvictionCandidate& b) {
              const size_t pa = position(a.shard);
              const size_t pb = position(b.shard);
              if (pa != pb) return pa > pb;  // kNotUpcoming is the largest: never needed first
              if (a.last_use_ns != b.last_use_ns) return a.last_use_ns < b.last_use_ns;
              return a.shard < b.shard;
            });
}

Status StampLastUse(int fd) {
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;
  // The kernel's own "now" (UTIME_NOW) is only as fine as its timer tick (milliseconds): shards
  // acquired in one tick would tie. An explicit time keeps nanoseconds but needs ownership.
  if (::clock_gettime(CLOCK_REALTIME, &times[1]) == 0 && ::futimens(fd, times) == 0) {
    return Status::Ok();
  }
  if (::futimens(fd, nullptr) == 0) return Status::Ok();
  return ErrnoToStatus(errno, "set mtime of", "use-lock file");
}

uint64_t MeasureDiskUsage(const CacheLayout& layout, const DatasetDescription& index) {
  uint64_t used = 0;
  for (const ShardDescription& shard : index.shards) {
    for (const FileInfo* form : shard.all_forms()) {
      used += StatFile(layout.FilePath(form->basename)).bytes;
    }
  }
  return used;
}

// The files of the processes publishing their counters here, and the totals of exited ones
// (counted at kMetricsTotalsBytes at least: they are written when a process leaves).
uint64_t MetricsBytes(const CacheLayout& layout) {
  std::error_code ec;
  if (!std::filesystem::is_directory(layout.MetricsDir(), ec)) return 0;
  uint64_t bytes = 0, totals = 0;
  for (const auto& entry : std::filesystem::directory_iterator(layout.MetricsDir(), ec)) {
    const uint64_t size = StatFile(entry.path()).bytes;
    (entry.path().filename() == metrics::kNodeTotalsFile ? totals : bytes) += size;
  }
  return bytes + std::max(totals, kMetricsTotalsBytes);
}

uint64_t MeasureOtherBytes(const CacheLayout& layout) {
  return StatFile(layout.IndexPath()).bytes + StatFile(layout.BinaryIndexPath()).bytes +
         StatFile(layout.OriginPath()).bytes + StatFile(layout.MirrorsPath()).bytes +
         std::max(kLedgerBytes, StatFile(layout.CacheLockPath()).bytes) + MetricsBytes(layout);
}

uint64_t PlannedOtherBytes(const CacheLayout& layout) {
  return 2 * StatFile(layout.IndexPath()).bytes + kPlannedRecordsBytes + kLedgerBytes +
         kMetricsTotalsBytes + metrics::kMetricsFileSize;
}

namespace {

// Shard `i`'s files as a scan sees them: bytes present, and its last use (for the LRU order).
struct ShardFiles {
  uint64_t bytes = 0;
  bool present = false;
  int64_t last_use_ns = 0;
};

ShardFiles ScanShard(const CacheLayout& layout, const ShardDescription& shard) {
  ShardFiles out;
  int64_t newest_mtime_ns = 0;
  for (const FileInfo* form : shard.all_forms()) {
    const FileState file = StatFile(layout.FilePath(form->basename));
    if (!file.exists) continue;
    out.present = true;
    out.bytes += file.bytes;
    newest_mtime_ns = std::max(newest_mtime_ns, file.mtime_ns);
  }
  if (!out.present) return {};
  // A shard put there without ferry (or whose lock files were cleared) has no stamp yet: its
  // files' mtime is the best guess of its last use.
  const FileState stamp = StatFile(layout.UseLockPath(shard.raw_data.basename));
  out.last_use_ns = stamp.exists ? stamp.mtime_ns : newest_mtime_ns;
  return out;
}

}  // namespace

std::vector<EvictionCandidate> LocalShards(const CacheLayout& layout,
                                           const DatasetDescription& index) {
  std::vector<EvictionCandidate> out;
  for (size_t i = 0; i < index.shards.size(); ++i) {
    const ShardFiles files = ScanShard(layout, index.shards[i]);
    if (files.present) {
      out.push_back({.shard = i, .last_use_ns = files.last_use_ns, .bytes = files.bytes});
    }
  }
  return out;
}

namespace {

// The usage ledger in cache.lock's contents: "<bytes> <scanned_at_ns> <scan_ns>\n".
struct Ledger {
  uint64_t bytes = 0;
  int64_t scanned_at_ns = 0;  // CLOCK_REALTIME: shared across processes
  int64_t scan_ns = 0;        // what the scan cost
};

int64_t RealtimeNs() {
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::optional<Ledger> ReadLedger(int fd) {
  char buffer[96] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return std::nullopt;
  Ledger ledger;
  unsigned long long bytes = 0;
  long long at = 0, cost = 0;
  // Anything else (an old empty lock file, a torn write) means "scan".
  if (std::sscanf(buffer, "%llu %lld %lld\n", &bytes, &at, &cost) != 3) return std::nullopt;
  ledger.bytes = bytes;
  ledger.scanned_at_ns = at;
  ledger.scan_ns = cost;
  return ledger;
}

void WriteLedger(int fd, const Ledger& ledger) {
  const std::string text =
      fmt::format("{} {} {}\n", ledger.bytes, ledger.scanned_at_ns, ledger.scan_ns);
  // Padded over whatever was longer before; a failed write only costs a scan next time.
  const std::string padded =
      text + std::string(text.size() < kLedgerBytes ? kLedgerBytes - text.size() : 0, ' ');
  if (::pwrite(fd, padded.data(), padded.size(), 0) < 0) {
    Log().debug("cache: cannot update the usage ledger: {}", std::strerror(errno));
  }
}

bool IsRecent(const Ledger& ledger, int64_t now_ns) {
  const int64_t age = now_ns - ledger.scanned_at_ns;
  return age >= 0 && age < std::max<int64_t>(1'000'000'000, 10 * ledger.scan_ns);
}

// Deletes a shard's files unless some process has it pinned. \pre cache.lock is held.
Result<EvictResult> RemoveUnpinned(const CacheLayout& layout, const ShardDescription& shard) {
  FERRY_ASSIGN_OR_RETURN(
      std::optional<FileLock> exclusive,
      FileLock::TryLock(layout.UseLockPath(shard.raw_data.basename), LockMode::kExclusive));
  if (!exclusive) return EvictResult{.pinned = true};
  // raw_data first (ShardDescription::files): a shard whose removal is cut short is incomplete,
  // never complete without a companion.
  uint64_t freed = RemoveFile(layout.FilePath(shard.raw_data.basename));
  if (shard.zip_data) freed += RemoveFile(layout.FilePath(shard.zip_data->basename));
  for (const CompanionFile& companion : shard.companions) {
    freed += RemoveFile(layout.FilePath(companion.raw.basename));
    if (companion.zip) freed += RemoveFile(layout.FilePath(companion.zip->basename));
  }
  // After the files: a record without its file is harmless, a file without its record would
  // lose the exact check after a reboot.
  for (const ShardFile& file : shard.files()) {
    RemoveDigestRecord(layout.DigestPath(file.raw->basename));
  }
  if (freed > 0) {
    CacheMetrics& metrics = CacheMetrics::Get();
    metrics.evictions.Add();
    metrics.evicted_bytes.Add(freed);
    Log().debug("cache: evicted {} ({} bytes) from {}", shard.raw_data.basename, freed,
                layout.root().string());
  }
  return EvictResult{.freed = freed};
}

// The basenames of the shard files that have a temporary under `layout` now. The folders that
// hold shard files are listed once (one for a plain dataset, one per part of a merged one), not
// each shard's temporary stat'ed: an index of 100,000 shards takes milliseconds.
std::set<std::string> FilesWithTemporaries(const CacheLayout& layout,
                                           const DatasetDescription& index) {
  std::set<std::string_view> folders;  // relative to the root, "" for the root
  for (const ShardDescription& shard : index.shards) {
    for (const FileInfo* form : shard.all_forms()) {
      const size_t slash = form->basename.rfind('/');
      folders.insert(
          std::string_view(form->basename).substr(0, slash == std::string::npos ? 0 : slash));
    }
  }
  std::set<std::string> files;
  for (std::string_view folder : folders) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(layout.root() / folder, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.ends_with(kTemporarySuffix)) continue;
      const std::string file = name.substr(0, name.size() - kTemporarySuffix.size());
      files.insert(folder.empty() ? file : fmt::format("{}/{}", folder, file));
    }
  }
  return files;
}

}  // namespace

Result<EvictResult> EvictShard(const CacheLayout& layout, const DatasetDescription& index,
                               size_t k) {
  if (k >= index.shards.size()) {
    return OutOfRangeError(fmt::format("{}: shard {} asked for; the index lists {}",
                                       layout.root().string(), k, index.shards.size()));
  }
  FERRY_ASSIGN_OR_RETURN(FileLock cache_lock,
                         FileLock::Lock(layout.CacheLockPath(), LockMode::kExclusive));
  FERRY_ASSIGN_OR_RETURN(const EvictResult result, RemoveUnpinned(layout, index.shards[k]));
  // The ledger may only over-count: lowered by what is gone for sure.
  if (std::optional<Ledger> ledger = ReadLedger(cache_lock.fd()); ledger && result.freed > 0) {
    ledger->bytes -= std::min(ledger->bytes, result.freed);
    WriteLedger(cache_lock.fd(), *ledger);
  }
  return result;
}

uint64_t SweepTemporaries(const CacheLayout& layout, const DatasetDescription& index,
                          size_t except_shard) {
  const std::set<std::string> files = FilesWithTemporaries(layout, index);
  if (files.empty()) return 0;
  uint64_t writing = 0;
  for (size_t i = 0; i < index.shards.size(); ++i) {
    if (i == except_shard) continue;
    const ShardDescription& shard = index.shards[i];
    std::vector<std::pair<std::filesystem::path, uint64_t>> temporaries;
    for (const FileInfo* form : shard.all_forms()) {
      if (!files.contains(form->basename)) continue;
      std::filesystem::path tmp = layout.TemporaryPath(form->basename);
      // A download being written takes its whole size soon: counted so, not at what has landed
      // (a whole download's file grows as its bytes come).
      if (const FileState file = StatFile(tmp); file.exists) {
        temporaries.emplace_back(std::move(tmp), std::max(file.bytes, form->bytes));
      }
    }
    if (temporaries.empty()) continue;
    auto lock =
        FileLock::TryLock(layout.DownloadLockPath(shard.raw_data.basename), LockMode::kExclusive);
    if (!lock || !*lock) {
      // Being written (or no lock to be had): it takes the disk it takes.
      for (const auto& [path, bytes] : temporaries) writing += bytes;
      continue;
    }
    for (const auto& [path, bytes] : temporaries) {
      if (::unlink(path.c_str()) == 0) {
        Log().debug("cache: removed {}, left by a download that did not finish", path.string());
      }
    }
  }
  return writing;
}

Result<RoomResult> MakeRoom(const CacheLayout& layout, const DatasetDescription& index,
                            std::span<const size_t> upcoming_position, const RoomRequest& request) {
  FERRY_ASSIGN_OR_RETURN(FileLock cache_lock,
                         FileLock::Lock(layout.CacheLockPath(), LockMode::kExclusive));
  RoomResult result;
  const int64_t start_ns = RealtimeNs();
  if (std::optional<Ledger> ledger = ReadLedger(cache_lock.fd());
      ledger && IsRecent(*ledger, start_ns) && ledger->bytes + request.needed <= request.limit) {
    result.used_before = result.used_after = ledger->bytes;
    result.scanned = false;
    ledger->bytes += request.needed;
    WriteLedger(cache_lock.fd(), *ledger);
    return result;
  }
  uint64_t used = 0;
  std::vector<EvictionCandidate> candidates;
  for (size_t i = 0; i < index.shards.size(); ++i) {
    const ShardFiles files = ScanShard(layout, index.shards[i]);
    if (!files.present) continue;
    used += files.bytes;
    if (i != request.for_shard)
      candidates.push_back({.shard = i, .last_use_ns = files.last_use_ns});
  }
  // Downloads being written elsewhere will hold their whole shard under a temporary name, and a
  // killed one's temporary stays until swept: counted at their full size, they leave the limit's
  // overshoot to the downloads that reserved room and have not created their file yet, not to
  // every one in flight (the ledger this scan replaces held their reservations).
  used += SweepTemporaries(layout, index, request.for_shard);
  result.used_before = used;
  if (used + request.needed > request.limit) {
    OrderVictims(candidates, upcoming_position);
    const uint64_t target = request.limit - std::min(request.limit, request.headroom);
    // A shard wanted sooner than the one being fetched stays: evicting it would fetch it again
    // first. One not in the list is wanted now (random access, or the reader is waiting).
    const auto position = [&](size_t shard) {
      return shard < upcoming_position.size() ? upcoming_position[shard] : kNotUpcoming;
    };
    const size_t wanted_at =
        position(request.for_shard) == kNotUpcoming ? 0 : position(request.for_shard);
    for (const EvictionCandidate& candidate : candidates) {
      if (used + request.needed <= target) break;
      const size_t at = position(candidate.shard);
      if (at != kNotUpcoming && at <= wanted_at) break;  // the victims left are all wanted sooner
      const ShardDescription& shard = index.shards[candidate.shard];
      FERRY_ASSIGN_OR_RETURN(const EvictResult evicted, RemoveUnpinned(layout, shard));
      if (evicted.freed == 0) continue;  // pinned by some process, or gone already
      used -= std::min(used, evicted.freed);
      ++result.evicted_shards;
      result.evicted_bytes += evicted.freed;
    }
  }
  result.used_after = used;
  result.fits = used + request.needed <= request.limit;
  const int64_t end_ns = RealtimeNs();
  WriteLedger(
      cache_lock.fd(),
      {.bytes = used + request.needed, .scanned_at_ns = end_ns, .scan_ns = end_ns - start_ns});
  return result;
}

}  // namespace ferry::internal_cache
