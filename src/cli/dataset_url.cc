#include "cli/dataset_url.h"

#include <fmt/format.h>

#include "cli/transfer.h"
#include "storage/http/http_types.h"
#include "storage/object_key.h"

namespace ferry::cli {

Result<DatasetUrl> DatasetUrl::Open(std::string_view url, std::string_view split) {
  DatasetUrl d;
  FERRY_ASSIGN_OR_RETURN(d.where_, OpenUrl(url));
  d.where_.key = FolderKey(d.where_.key);
  d.name_ = http::RedactUrl(url);
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
  return InvalidArgumentError(fmt::format(
      "{} is not a dataset: {} does not exist (a folder of WebDataset tars needs the list that "
      "`ferry index {}` writes)",
      name_, UrlOf("index.json"), name_));
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
