#include "stream/stream_mirrors.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "base/file_util.h"
#include "base/log.h"
#include "cache/cache_layout.h"
#include "cache/cached_index.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/index.h"
#include "ferry/metrics/node_metrics.h"
#include "ferry/storage/registry.h"
#include "storage/instrumented_store.h"
#include "storage/mirror_store.h"

namespace ferry::internal_stream {

std::string DatasetFolder(std::string key, std::string_view split) {
  if (!key.empty() && !key.ends_with('/')) key += '/';
  if (!split.empty()) key += std::string(split) + "/";
  return key;
}

bool IsTheLocalFolder(const ObjectStore& store, const std::string& prefix,
                      const std::filesystem::path& local) {
  std::error_code ec;
  const auto path = store.LocalPath(prefix);
  return path && std::filesystem::equivalent(*path, local, ec);
}

void IndexSizes::Fill(const DatasetDescription& index) {
  if (filled_.load(std::memory_order_relaxed)) return;
  for (const ShardDescription& shard : index.shards) {
    for (const FileInfo* file : shard.all_forms()) sizes_[file->basename] = file->bytes;
  }
  filled_.store(true, std::memory_order_release);
}

std::optional<uint64_t> IndexSizes::Of(std::string_view basename) const {
  if (!filled_.load(std::memory_order_acquire)) return std::nullopt;
  const auto it = sizes_.find(basename);
  return it == sizes_.end() ? std::nullopt : std::optional(it->second);
}

namespace {

// The versions in .ferry/mirrors.json; none when it is missing or unreadable (the copies are
// then read and compared, as at a first open).
CopyVersions ReadMirrorVersions(const internal_cache::CacheLayout& layout) {
  auto text = ReadFileToString(layout.MirrorsPath());
  if (!text) return {};
  try {
    return nlohmann::json::parse(*text).at("index_versions").get<CopyVersions>();
  } catch (const nlohmann::json::exception& e) {
    Log().debug("mirrors: {}: not read: {}", layout.MirrorsPath().string(), e.what());
    return {};
  }
}

// Best effort: a folder that cannot be written has the copies compared at every open.
void WriteMirrorVersions(const internal_cache::CacheLayout& layout, const CopyVersions& versions) {
  const std::filesystem::path path = layout.MirrorsPath();
  Status written = internal_cache::CreateCacheFolders(path.parent_path());
  if (written.ok()) {
    const nlohmann::json json = {{"index_versions", versions}};
    written = WriteFileAtomically(path, json.dump() + "\n", internal_cache::Modes().file);
  }
  if (!written.ok()) Log().debug("mirrors: not recorded: {}", written.ToString());
}

// The mirrors, shown to hold one dataset (MirrorsOfOneDataset): by their versions alone when
// they are those kept, else by reading the copies under the folder's cache.lock, so that the
// processes of a node opening at once read them once - those that waited find the versions
// kept. A folder made only for the lock goes again when the mirrors show no dataset.
Result<OneDataset> ShowOneDataset(std::vector<Mirror> mirrors,
                                  const internal_cache::CacheLayout& layout) {
  constexpr std::string_view kIndex = "index.json";
  if (CopyVersions known = ReadMirrorVersions(layout); !known.empty()) {
    FERRY_ASSIGN_OR_RETURN(OneDataset one, MirrorsOfOneDataset(mirrors, kIndex, known, false));
    if (one.confirmed) return one;
  }
  std::error_code ec;
  const bool folder_existed = std::filesystem::exists(layout.root(), ec);
  std::optional<internal_cache::FileLock> lock;
  if (internal_cache::CreateCacheFolders(layout.root()).ok()) {
    auto locked = internal_cache::LockCacheFolder(layout);
    if (locked) {
      lock.emplace(std::move(*locked));
    } else {
      Log().debug("mirrors: showing them without {}: {}", layout.CacheLockPath().string(),
                  locked.status().ToString());
    }
  }
  auto one = MirrorsOfOneDataset(std::move(mirrors), kIndex, ReadMirrorVersions(layout));
  if (one && !one->versions.empty()) WriteMirrorVersions(layout, one->versions);
  lock.reset();
  if (!one && !folder_existed) std::filesystem::remove_all(layout.root(), ec);
  return one;
}

}  // namespace

Result<OpenedMirrors> OpenMirrors(const StreamSpec& spec, const std::filesystem::path& local,
                                  bool offline, std::function<uint64_t()> epoch) {
  std::vector<std::string> urls = {spec.remote};
  urls.insert(urls.end(), spec.mirrors.begin(), spec.mirrors.end());
  for (const auto& [url, egress] : spec.egress) {
    if (std::find(urls.begin(), urls.end(), url) == urls.end()) {
      return InvalidArgumentError(
          fmt::format("egress for {}, which is not the stream's remote or one of its mirrors ({})",
                      url, fmt::join(urls, ", ")));
    }
    if (egress.usd_per_gb < 0) {
      return InvalidArgumentError(fmt::format("egress for {}: a negative price", url));
    }
  }
  std::vector<Mirror> mirrors;
  for (const std::string& url : urls) {
    FERRY_ASSIGN_OR_RETURN(StoreAndKey opened, OpenUrl(url));
    std::string prefix = DatasetFolder(std::move(opened.key), spec.split);
    if (IsTheLocalFolder(*opened.store, prefix, local)) {
      return InvalidArgumentError(fmt::format(
          "{}: a mirror is the cache folder itself, whose shards a cache would evict", url));
    }
    SourceEgress egress;
    if (auto it = spec.egress.find(url); it != spec.egress.end()) {
      egress = {.label = it->second.label,
                .usd_per_gb = it->second.usd_per_gb,
                .budget = it->second.budget,
                .epoch_budget = it->second.epoch_budget};
    }
    mirrors.push_back({.store = Instrument(opened.store),
                       .prefix = std::move(prefix),
                       .egress = std::move(egress)});
  }
  std::string index_version;
  if (!offline) {
    FERRY_ASSIGN_OR_RETURN(OneDataset one,
                           ShowOneDataset(std::move(mirrors), internal_cache::CacheLayout(local)));
    mirrors = std::move(one.mirrors);
    index_version = std::move(one.version);
  }
  MirrorOptions options;
  // So that a mirror holding a copy of another size than the index gives is passed over.
  auto sizes = std::make_shared<IndexSizes>();
  options.size_of = [sizes](std::string_view key) { return sizes->Of(key); };
  // Budgets are kept against what every process of the node delivered into the folder.
  auto node_total = [local](const std::string& counter) -> int64_t {
    // This process's own count as it is now, not as its last publication had it.
    metrics::FlushNodeMetrics();
    auto node = ReadCacheFolderMetrics(local);
    if (!node.ok()) return 0;
    const auto it = node->values.find(counter);
    return it == node->values.end() ? 0 : it->second;
  };
  options.node_total = std::move(node_total);
  options.epoch = std::move(epoch);
  FERRY_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store,
                         MakeMirrorStore(std::move(mirrors), std::move(options)));
  return OpenedMirrors{.store = std::move(store),
                       .sizes = std::move(sizes),
                       .index_version = std::move(index_version)};
}

}  // namespace ferry::internal_stream
