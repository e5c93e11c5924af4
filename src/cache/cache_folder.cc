#include "ferry/cache/cache_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "base/file_util.h"
#include "base/mapped_file.h"
#include "cache/cache_layout.h"
#include "cache/cached_index.h"
#include "cache/digest_record.h"
#include "cache/download_digest.h"
#include "cache/eviction.h"
#include "cache/reader_registry.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/index.h"
#include "format/hash.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using internal_cache::CacheLayout;

Result<DatasetDescription> FolderIndex(const CacheLayout& layout) {
  std::error_code ec;
  if (!fs::is_directory(layout.root(), ec)) {
    return NotFoundError(fmt::format("{}: no such folder", layout.root().string()));
  }
  auto index = internal_cache::ReadCachedIndex(layout);
  if (!index.ok() && index.status().code() == StatusCode::kNotFound) {
    return InvalidArgumentError(
        fmt::format("{}: not a cache folder (no index.json: nothing was streamed into it)",
                    layout.root().string()));
  }
  if (!index.ok()) return index;
  // Every name is checked before one is removed: nothing outside the folder, nothing of ferry's.
  for (const ShardDescription& shard : index->shards) {
    for (const FileInfo* form : shard.all_forms()) {
      FERRY_RETURN_IF_ERROR(
          ValidateBasename(form->basename).WithContext(layout.IndexPath().string()));
      FERRY_RETURN_IF_ERROR(internal_cache::CheckBasenameIsNotReserved(form->basename)
                                .WithContext(layout.IndexPath().string()));
    }
  }
  return index;
}

// The processes reading the folder now, named for an error.
std::string Readers(const std::vector<metrics::ProcessMetrics>& processes) {
  std::vector<std::string> names;
  for (const auto& p : processes) names.push_back(fmt::format("{} ({})", p.pid, p.label));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

Result<std::vector<fs::path>> CacheFoldersOrDefault(const std::vector<std::string>& given) {
  std::vector<fs::path> out(given.begin(), given.end());
  if (out.empty()) out = FindCacheFolders(DefaultCacheRoot());
  if (out.empty()) {
    return NotFoundError(
        fmt::format("no cache folder given, and none under {}", DefaultCacheRoot().string()));
  }
  return out;
}

Result<CacheFolderMeter> CacheFolderMeter::Open(const fs::path& folder) {
  FERRY_ASSIGN_OR_RETURN(DatasetDescription index, FolderIndex(CacheLayout(folder)));
  return CacheFolderMeter(folder, std::make_shared<const DatasetDescription>(std::move(index)));
}

uint64_t CacheFolderMeter::Bytes() const {
  const CacheLayout layout(folder_);
  return internal_cache::MeasureDiskUsage(layout, *index_) +
         internal_cache::MeasureOtherBytes(layout);
}

Result<CacheFolderInfo> InspectCacheFolder(const fs::path& folder) {
  const CacheLayout layout(folder);
  FERRY_ASSIGN_OR_RETURN(const DatasetDescription index, FolderIndex(layout));
  CacheFolderInfo info{.folder = folder, .shards = index.shards.size()};
  if (auto origin = internal_cache::ReadCacheOrigin(layout); origin.ok() && *origin) {
    info.remote = (*origin)->remote;
  }
  const auto local = internal_cache::LocalShards(layout, index);
  info.cached_shards = local.size();
  for (const auto& shard : local) info.shard_bytes += shard.bytes;
  info.other_bytes = internal_cache::MeasureOtherBytes(layout);
  if (auto readers = internal_cache::CountReaders(layout); readers.ok()) info.readers = *readers;
  FERRY_ASSIGN_OR_RETURN(metrics::NodeMetrics node, ReadCacheFolderMetrics(folder));
  // The largest of the readers' (metrics::AcrossProcesses::kLargest).
  if (auto it = node.values.find("/ferry/cache/limit_bytes"); it != node.values.end()) {
    info.limit = static_cast<uint64_t>(std::max<int64_t>(0, it->second));
  }
  info.processes = std::move(node.processes);
  return info;
}

fs::path DefaultCacheRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / "ferry-cache";
}

std::vector<fs::path> FindCacheFolders(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    if (fs::is_regular_file(entry.path() / "index.json", ec)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<CacheVerifyReport> VerifyCacheFolder(const fs::path& folder, bool remove_bad) {
  const CacheLayout layout(folder);
  FERRY_ASSIGN_OR_RETURN(const DatasetDescription index, FolderIndex(layout));
  CacheVerifyReport report;
  for (size_t k = 0; k < index.shards.size(); ++k) {
    bool bad = false;
    for (const FileInfo* form : index.shards[k].all_forms()) {
      const fs::path path = layout.FilePath(form->basename);
      std::error_code ec;
      if (!fs::exists(path, ec)) continue;
      ++report.checked;
      const auto problem = [&](std::string what) {
        report.problems.push_back({.file = form->basename, .problem = std::move(what)});
        bad = true;
      };
      auto mapped = MappedFile::Open(path);
      if (!mapped.ok()) {
        problem(mapped.status().ToString());
        continue;
      }
      if (mapped->size() != form->bytes) {
        problem(fmt::format("{} bytes, the index says {}", mapped->size(), form->bytes));
        continue;
      }
      auto known = std::find_if(form->hashes.begin(), form->hashes.end(),
                                [](const auto& h) { return IsKnownHash(h.first); });
      if (known == form->hashes.end()) {
        // No digest in the index: the one ferry recorded when it wrote the file, if any.
        auto record = internal_cache::ReadDigestRecord(layout.DigestPath(form->basename));
        // A record not readable now (EMFILE, EACCES) is no verdict on the file; a garbled
        // one says nothing of what it should hold.
        if (!record && record.status().code() == StatusCode::kDataLoss) {
          problem(record.status().ToString());
        } else if (record && *record) {
          ++report.hashed;
          const uint64_t xxh3 = internal_cache::DigestOf(mapped->data(), ChecksumKind::kNone).xxh3;
          if (xxh3 != (*record)->xxh3) {
            problem(
                fmt::format("XXH3 {:016x}, its digest record says {:016x}", xxh3, (*record)->xxh3));
          }
        }
        continue;
      }
      ++report.hashed;
      FERRY_ASSIGN_OR_RETURN(const std::string digest, HashHex(known->first, mapped->data()));
      if (digest != known->second) {
        problem(fmt::format("{} {}, the index says {}", known->first, digest, known->second));
      }
    }
    if (bad && remove_bad) {
      FERRY_ASSIGN_OR_RETURN(const internal_cache::EvictResult evicted,
                             internal_cache::EvictShard(layout, index, k));
      if (evicted.pinned) {
        report.problems.push_back(
            {.file = index.shards[k].raw_data.basename, .problem = "left: a reader has it pinned"});
      } else {
        ++report.removed;
      }
    }
  }
  return report;
}

Result<CacheRemoval> ClearCacheFolder(const fs::path& folder, bool everything) {
  const CacheLayout layout(folder);
  FERRY_ASSIGN_OR_RETURN(const DatasetDescription index, FolderIndex(layout));
  if (everything) {
    FERRY_ASSIGN_OR_RETURN(const metrics::NodeMetrics node, ReadCacheFolderMetrics(folder));
    auto readers = internal_cache::CountReaders(layout);
    if (!node.processes.empty() || (readers.ok() && *readers > 0)) {
      return FailedPreconditionError(
          fmt::format("{}: read now by {}; clear it when they are done (or clear its shards alone: "
                      "those not in use go)",
                      folder.string(),
                      node.processes.empty() ? fmt::format("{} reader(s)", *readers)
                                             : Readers(node.processes)));
    }
  }
  CacheRemoval removal;
  for (const auto& shard : internal_cache::LocalShards(layout, index)) {
    FERRY_ASSIGN_OR_RETURN(const internal_cache::EvictResult evicted,
                           internal_cache::EvictShard(layout, index, shard.shard));
    if (evicted.pinned) {
      ++removal.pinned_shards;
    } else {
      ++removal.removed_shards;
      removal.freed_bytes += evicted.freed;
    }
  }
  if (everything) {
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
      std::error_code size_ec;
      if (entry.is_regular_file(size_ec)) removal.freed_bytes += entry.file_size(size_ec);
      fs::remove_all(entry.path(), ec);
      if (ec) return ErrnoToStatus(ec.value(), "removing", entry.path());
    }
  }
  return removal;
}

Result<CacheRemoval> PruneCacheFolder(const fs::path& folder, const PruneOptions& options) {
  const CacheLayout layout(folder);
  FERRY_ASSIGN_OR_RETURN(const DatasetDescription index, FolderIndex(layout));
  std::vector<internal_cache::EvictionCandidate> shards =
      internal_cache::LocalShards(layout, index);
  std::sort(shards.begin(), shards.end(),
            [](const auto& a, const auto& b) { return a.last_use_ns < b.last_use_ns; });
  uint64_t used = internal_cache::MeasureOtherBytes(layout);
  for (const auto& candidate : shards) used += candidate.bytes;
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  CacheRemoval removal;
  for (const auto& candidate : shards) {
    const bool too_old =
        options.older_than &&
        now_ns - candidate.last_use_ns >
            std::chrono::duration_cast<std::chrono::nanoseconds>(*options.older_than).count();
    const bool too_big = options.to_bytes && used > *options.to_bytes;
    if (!too_old && !too_big) continue;
    FERRY_ASSIGN_OR_RETURN(const internal_cache::EvictResult evicted,
                           internal_cache::EvictShard(layout, index, candidate.shard));
    if (evicted.pinned) {
      ++removal.pinned_shards;
      continue;
    }
    ++removal.removed_shards;
    removal.freed_bytes += evicted.freed;
    used -= std::min(used, evicted.freed);
  }
  return removal;
}

}  // namespace ferry
