#include "cache/tar_shard_list.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include "base/log.h"
#include "base/mapped_file.h"
#include "base/run_each.h"
#include "storage/http/http_types.h"

namespace ferry::internal_cache {

Result<std::vector<ObjectInfo>> ListTarShards(ObjectStore& store, const std::string& prefix,
                                              const std::string& url) {
  FERRY_ASSIGN_OR_RETURN(ListResult listing, store.List(prefix, /*recursive=*/false));
  std::vector<ObjectInfo> tars;
  for (ObjectInfo& object : listing.objects) {
    if (internal_format::IsTarShardName(std::string_view(object.key).substr(prefix.size()))) {
      tars.push_back(std::move(object));
    }
  }
  if (tars.empty()) return NotFoundError(fmt::format("{} holds no .tar (or .tar.gz) shards", url));
  return tars;
}

Result<std::vector<ObjectInfo>> SelectTarShards(ObjectStore& store, const std::string& prefix,
                                                const std::string& url,
                                                const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (!internal_format::IsTarShardName(name)) {
      return InvalidArgumentError(fmt::format(
          "{}{}: a shard pattern names WebDataset tars (.tar, .tar.gz, .tgz)", url, name));
    }
  }
  FERRY_ASSIGN_OR_RETURN(ListResult listing, store.List(prefix, /*recursive=*/false));
  std::map<std::string_view, ObjectInfo*> by_name;
  for (ObjectInfo& object : listing.objects) {
    by_name[std::string_view(object.key).substr(prefix.size())] = &object;
  }
  std::vector<ObjectInfo> tars;
  std::vector<std::string> missing;
  for (const std::string& name : names) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      missing.push_back(name);
    } else {
      tars.push_back(*it->second);
    }
  }
  if (!missing.empty()) {
    std::string shown = url + missing[0];
    for (size_t i = 1; i < std::min<size_t>(missing.size(), 3); ++i) shown += ", " + missing[i];
    return NotFoundError(fmt::format(
        "{}{}: not in the folder (named by the shard pattern)", shown,
        missing.size() > 3 ? fmt::format(" and {} more", missing.size() - 3) : std::string()));
  }
  return tars;
}

std::map<std::string, std::string> TarVersions(const std::vector<ObjectInfo>& tars,
                                               const std::string& prefix) {
  std::map<std::string, std::string> versions;
  for (const ObjectInfo& tar : tars) versions[tar.key.substr(prefix.size())] = ObjectVersion(tar);
  return versions;
}

std::string TarListingVersion(const std::vector<ObjectInfo>& tars) {
  std::string text;
  for (const ObjectInfo& tar : tars) {
    text += fmt::format("{}\t{}\t{}\n", tar.key, tar.size, ObjectVersion(tar));
  }
  // Told apart from an index.json's version (an etag) by its form.
  return fmt::format("tars:{}:{:016x}", tars.size(), XXH3_64bits(text.data(), text.size()));
}

Result<DatasetDescription> DescribeTarShards(const std::vector<ObjectInfo>& tars,
                                             const std::string& prefix, uint32_t jobs,
                                             const TarCounter& count) {
  std::vector<std::optional<Result<internal_format::TarShardCount>>> counts(tars.size());
  std::stop_source failed;
  RunEach(tars.size(), jobs, [&](size_t k) {
    if (failed.stop_requested()) return;
    counts[k] = count(k, failed.get_token());
    if (!counts[k]->ok()) failed.request_stop();
  });
  // The first failure in shard order, so that the error does not depend on thread timing more
  // than it must (a shard after it may not have been counted at all); not a count that the
  // failure itself cancelled.
  const std::optional<Result<internal_format::TarShardCount>>* cancelled = nullptr;
  for (const auto& c : counts) {
    if (!c || c->ok()) continue;
    if (c->error().code() != StatusCode::kCancelled) return c->error();
    if (cancelled == nullptr) cancelled = &c;
  }
  if (cancelled != nullptr) return (*cancelled)->error();
  DatasetDescription description;
  for (size_t k = 0; k < tars.size(); ++k) {
    const std::string name = tars[k].key.substr(prefix.size());
    const internal_format::TarShardCount& c = **counts[k];
    std::optional<uint64_t> raw_filesize;
    if (internal_format::TarOfGzip(name)) raw_filesize = c.tar_bytes;
    description.shards.push_back(
        internal_format::DescribeWebDatasetShard(name, tars[k].size, raw_filesize, c.samples));
  }
  return description;
}

Result<DatasetDescription> ScanTarShards(ObjectStore* remote, const std::string& prefix,
                                         const std::vector<ObjectInfo>& tars,
                                         const ShardCacheOptions& options, uint32_t jobs) {
  // The plain tars, as a dataset the cache can fetch (their sample counts are what is sought).
  DatasetDescription plain;
  std::vector<size_t> slot(tars.size(), 0);
  for (size_t k = 0; k < tars.size(); ++k) {
    const std::string name = tars[k].key.substr(prefix.size());
    if (internal_format::TarOfGzip(name)) continue;
    slot[k] = plain.shards.size();
    plain.shards.push_back(
        internal_format::DescribeWebDatasetShard(name, tars[k].size, std::nullopt, 0));
  }
  std::unique_ptr<ShardCache> cache;
  if (!plain.shards.empty()) {
    // The cache only borrows the store: it is gone before this returns.
    std::shared_ptr<ObjectStore> borrowed(std::shared_ptr<ObjectStore>(), remote);
    FERRY_ASSIGN_OR_RETURN(cache, ShardCache::Open(borrowed, prefix, std::move(plain), options));
  }
  Log().info("{}: no index.json; reading its {} tar shards once to count their samples",
             http::RedactUrl(remote->ToUrl(prefix)), tars.size());
  auto count = [&](size_t k, std::stop_token stop) -> Result<internal_format::TarShardCount> {
    const std::string name = tars[k].key.substr(prefix.size());
    const std::string url = http::RedactUrl(remote->ToUrl(tars[k].key));
    if (internal_format::TarOfGzip(name)) {
      FERRY_ASSIGN_OR_RETURN(const std::string bytes, remote->Get(tars[k].key, stop));
      return internal_format::CountTarSamples(bytes, /*gzipped=*/true, url);
    }
    FERRY_ASSIGN_OR_RETURN(const ShardHandle handle, cache->Acquire(slot[k], stop));
    FERRY_ASSIGN_OR_RETURN(const MappedFile file, MappedFile::Open(handle.path()));
    return internal_format::CountTarSamples(file.data(), /*gzipped=*/false, url);
  };
  return DescribeTarShards(tars, prefix, jobs, count);
}

}  // namespace ferry::internal_cache
