#include "stream/stream_mirrors.h"

#include <fmt/format.h>

#include <string>
#include <system_error>
#include <vector>

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
                                                 const std::filesystem::path& local, bool offline) {
  std::vector<std::string> urls = {spec.remote};
  urls.insert(urls.end(), spec.mirrors.begin(), spec.mirrors.end());
  std::vector<Mirror> mirrors;
  for (const std::string& url : urls) {
    FERRY_ASSIGN_OR_RETURN(StoreAndKey opened, OpenUrl(url));
    std::string prefix = DatasetFolder(std::move(opened.key), spec.split);
    if (IsTheLocalFolder(*opened.store, prefix, local)) {
      return InvalidArgumentError(fmt::format(
          "{}: a mirror is the cache folder itself, whose shards a cache would evict", url));
    }
    mirrors.push_back({.store = Instrument(opened.store), .prefix = std::move(prefix)});
  }
  if (!offline) {
    FERRY_ASSIGN_OR_RETURN(mirrors, MirrorsOfOneDataset(std::move(mirrors), "index.json"));
  }
  return MakeMirrorStore(std::move(mirrors));
}

}  // namespace ferry::internal_stream
