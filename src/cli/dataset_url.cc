#include "cli/dataset_url.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <system_error>

#include "cache/tar_shard_list.h"
#include "cli/scratch_folder.h"
#include "cli/transfer.h"
#include "format/shard_pattern.h"
#include "format/webdataset_index.h"
#include "storage/http/http_types.h"
#include "storage/object_key.h"

namespace ferry::cli {
namespace {

// Tars read at once when a command lists a folder's (`ferry index --jobs` chooses).
constexpr uint32_t kDescribeJobs = 8;

}  // namespace

Result<DatasetUrl> DatasetUrl::Open(std::string_view url, std::string_view split) {
  DatasetUrl d;
  d.name_ = http::RedactUrl(url);
  if (internal_format::IsShardPattern(url)) {
    if (!split.empty()) {
      return InvalidArgumentError(
          fmt::format("{}: a shard pattern names its shards; --split does not apply", d.name_));
    }
    FERRY_ASSIGN_OR_RETURN(internal_format::ShardSelection selection,
                           internal_format::ParseShardPattern(url));
    FERRY_ASSIGN_OR_RETURN(d.where_, OpenUrl(selection.folder));
    d.where_.key = FolderKey(d.where_.key);
    d.tar_names_ = std::move(selection.shards);
    return d;  // not local(): read through scratch copies (see the header)
  }
  FERRY_ASSIGN_OR_RETURN(d.where_, OpenUrl(url));
  d.where_.key = FolderKey(d.where_.key);
  if (!split.empty()) {
    d.where_.key += FolderKey(split);
    d.name_ = fmt::format(
        "{}/{}", d.name_.ends_with('/') ? d.name_.substr(0, d.name_.size() - 1) : d.name_, split);
  }
  if (auto path = d.where_.store->LocalPath(d.where_.key)) {
    d.local_ = path->has_filename() ? *path : path->parent_path();  // without the trailing '/'
  }
  return d;
}

std::string DatasetUrl::UrlOf(std::string_view basename) const {
  return http::RedactUrl(where_.store->ToUrl(where_.key + std::string(basename)));
}

Result<std::string> DatasetUrl::ReadIndexText() const {
  if (is_pattern()) {
    FERRY_ASSIGN_OR_RETURN(const DatasetDescription tars, DescribeTars(kDescribeJobs));
    return internal_format::SerializeWebDatasetIndex(tars);
  }
  auto text = where_.store->Get(where_.key + "index.json");
  if (text || text.error().code() != StatusCode::kNotFound) return text;
  // Missing folder or a folder of something else: the same two answers as for a local folder.
  auto listing = where_.store->List(where_.key, /*recursive=*/false);
  if (!listing && listing.error().code() == StatusCode::kUnimplemented) return text;  // http
  if (listing ? listing->objects.empty() && listing->prefixes.empty()
              : listing.error().code() == StatusCode::kNotFound) {
    return NotFoundError(
        fmt::format("{} does not exist (so neither does {})", name_, UrlOf("index.json")));
  }
  if (listing &&
      std::any_of(listing->objects.begin(), listing->objects.end(), [&](const ObjectInfo& object) {
        return internal_format::IsTarShardName(
            std::string_view(object.key).substr(where_.key.size()));
      })) {
    FERRY_ASSIGN_OR_RETURN(const DatasetDescription tars, DescribeTars(kDescribeJobs));
    std::fprintf(stderr,
                 "note: %s has no index.json: read each of its %zu tar shards to list them "
                 "(`ferry index %s` writes the list once)\n",
                 name_.c_str(), tars.shards.size(), name_.c_str());
    return internal_format::SerializeWebDatasetIndex(tars);
  }
  return InvalidArgumentError(
      fmt::format("{} is not a dataset: {} does not exist, and there are no .tar shards", name_,
                  UrlOf("index.json")));
}

Result<DatasetDescription> DatasetUrl::DescribeTars(uint32_t jobs) const {
  FERRY_ASSIGN_OR_RETURN(
      const std::vector<ObjectInfo> shards,
      is_pattern()
          ? internal_cache::SelectTarShards(*where_.store, where_.key, UrlOf(""), tar_names_)
          : internal_cache::ListTarShards(*where_.store, where_.key, name_));
  std::unique_ptr<ScratchFolder> scratch;
  if (!local_) {
    FERRY_ASSIGN_OR_RETURN(scratch, ScratchFolder::Create("tars"));
  }
  auto count = [&](size_t k, std::stop_token stop) -> Result<internal_format::TarShardCount> {
    const std::string name = shards[k].key.substr(where_.key.size());
    const std::string url = UrlOf(name);
    const bool gzipped = internal_format::TarOfGzip(name).has_value();
    if (local_) return internal_format::CountTarFile(*local_ / name, gzipped, url);
    const auto path = scratch->path() / fmt::format("{}.tar", k);
    auto got = where_.store->GetToFile(shards[k].key, path, stop);
    auto counted = got ? internal_format::CountTarFile(path, gzipped, url)
                       : Result<internal_format::TarShardCount>(got.error());
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return counted;
  };
  return internal_cache::DescribeTarShards(shards, where_.key, jobs, count);
}

Result<DatasetDescription> DatasetUrl::ReadIndex() const {
  FERRY_ASSIGN_OR_RETURN(std::string text, ReadIndexText());
  return ParseIndexFile(text, UrlOf("index.json"));
}

Result<std::set<std::string>> DatasetUrl::Present(const std::vector<std::string>& basenames) const {
  std::set<std::string> folders;
  for (const std::string& name : basenames) {
    const size_t slash = name.rfind('/');
    folders.insert(slash == std::string::npos ? "" : name.substr(0, slash + 1));
  }
  std::set<std::string> present;
  for (const std::string& folder : folders) {
    auto listing = where_.store->List(where_.key + folder, /*recursive=*/false);
    if (!listing && listing.error().code() == StatusCode::kUnimplemented) {
      // A store that cannot list (http): one HEAD per file instead.
      for (const std::string& name : basenames) {
        if (!name.starts_with(folder) || name.find('/', folder.size()) != std::string::npos) {
          continue;
        }
        auto info = where_.store->Head(where_.key + name);
        if (info) present.insert(name);
        if (!info && info.error().code() != StatusCode::kNotFound) return info.status();
      }
      continue;
    }
    if (!listing) return listing.status();
    for (const ObjectInfo& obj : listing->objects) {
      present.insert(obj.key.substr(where_.key.size()));
    }
  }
  std::set<std::string> out;
  for (const std::string& name : basenames) {
    if (present.contains(name)) out.insert(name);
  }
  return out;
}

std::vector<std::string> ShardFiles(const ShardDescription& entry) {
  std::vector<std::string> files;
  for (const ShardFile& file : entry.files()) {
    if (file.zip) files.push_back(file.zip->basename);
    files.push_back(file.raw->basename);
  }
  return files;
}

}  // namespace ferry::cli
