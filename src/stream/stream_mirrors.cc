#include "stream/stream_mirrors.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <vector>

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

Result<std::shared_ptr<ObjectStore>> OpenMirrors(const StreamSpec& spec,
                                                 const std::filesystem::path& local, bool offline,
                                                 std::function<uint64_t()> epoch) {
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
  MirrorOptions options;
  if (!offline) {
    std::string index;
    FERRY_ASSIGN_OR_RETURN(mirrors, MirrorsOfOneDataset(std::move(mirrors), "index.json", &index));
    // The sizes the index gives, so that a mirror holding a copy of another size is passed
    // over. An index that does not parse fails the open later, with its own error.
    if (auto dataset = ParseIndexFile(index, "index.json"); dataset.ok()) {
      for (const ShardDescription& shard : dataset->shards) {
        for (const FileInfo* file : shard.all_forms()) options.sizes[file->basename] = file->bytes;
      }
    }
  }
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
  return MakeMirrorStore(std::move(mirrors), std::move(options));
}

}  // namespace ferry::internal_stream
