#include "files/file_listing.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "base/log.h"
#include "cache/cache_layout.h"
#include "cache/shard_downloader.h"
#include "ferry/format/index.h"
#include "storage/object_key.h"

namespace ferry::internal_files {
namespace {

constexpr int kListingVersion = 1;

std::string_view LabelName(FileLabels labels) {
  return labels == FileLabels::kFolder ? "folder" : "none";
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Folders (relative to the root, "" for the root itself) that hold an MDS dataset: index.json
// beside shard files. Listed as files, its shards would be samples of a class named after the
// folder, or (at the root, with folder labels) no samples at all.
std::vector<std::string> MdsFolders(const std::vector<ObjectInfo>& objects,
                                    std::string_view folder) {
  std::set<std::string> with_index, with_shards;
  for (const ObjectInfo& object : objects) {
    if (!object.key.starts_with(folder)) continue;
    const std::string_view path = std::string_view(object.key).substr(folder.size());
    const size_t slash = path.rfind('/');
    const std::string dir(slash == path.npos ? "" : path.substr(0, slash));
    const std::string_view name = slash == path.npos ? path : path.substr(slash + 1);
    if (name == "index.json") with_index.insert(dir);
    if (IsMdsShardName(name)) with_shards.insert(dir);
  }
  std::vector<std::string> both;
  std::set_intersection(with_index.begin(), with_index.end(), with_shards.begin(),
                        with_shards.end(), std::back_inserter(both));
  return both;
}

}  // namespace

bool IsMdsShardName(std::string_view name) {
  return name.starts_with("shard.") && (name.ends_with(".mds") || name.find(".mds.") != name.npos);
}

bool HasExtension(std::string_view path, const std::vector<std::string>& extensions) {
  if (extensions.empty()) return true;
  const std::string lower = ToLower(path);
  return std::any_of(extensions.begin(), extensions.end(),
                     [&](const std::string& ext) { return lower.ends_with(ext); });
}

Result<std::vector<std::string>> NormalizeExtensions(const std::vector<std::string>& extensions) {
  std::vector<std::string> out;
  for (const std::string& ext : extensions) {
    if (ext.empty() || ext == ".") {
      return InvalidArgumentError(
          "extensions: an empty extension matches every file; leave "
          "`extensions` empty to keep every file");
    }
    out.push_back(ToLower(ext.front() == '.' ? ext : "." + ext));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<Listing> ListFiles(ObjectStore& store, std::string_view prefix, std::string root_url,
                          FileLabels labels, std::vector<std::string> extensions) {
  const std::string folder = FolderKey(prefix);  // "" or "prefix/"
  auto listed = store.List(folder, /*recursive=*/true);
  if (!listed) return listed.error().WithContext(fmt::format("listing {}", root_url));
  if (const auto mds = MdsFolders(listed->objects, folder); !mds.empty()) {
    const std::string where =
        mds.front().empty()
            ? root_url
            : fmt::format("{}{}{}", root_url, root_url.ends_with('/') ? "" : "/", mds.front());
    return InvalidArgumentError(
        fmt::format("{} holds an MDS dataset (index.json): read it with StreamingDataset, or "
                    "point FileDataset at the raw files",
                    where));
  }
  Listing listing;
  listing.root = std::move(root_url);
  listing.labels = labels;
  listing.extensions = std::move(extensions);
  listing.listed_at_s = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  std::map<std::string, int64_t> classes;
  uint64_t unlabeled = 0;
  for (ObjectInfo& object : listed->objects) {
    if (!object.key.starts_with(folder)) continue;  // a store that ignored the prefix
    std::string path = object.key.substr(folder.size());
    if (path.empty() || path.back() == '/' || !HasExtension(path, listing.extensions)) continue;
    if (Status s = ValidateBasename(path); !s.ok()) {
      return InvalidArgumentError(
          fmt::format("{}: the listing holds a key that is not a safe "
                      "relative path ({}): {}",
                      listing.root, path, s.message()));
    }
    if (Status s = internal_cache::CheckBasenameIsNotReserved(path); !s.ok()) {
      return InvalidArgumentError(fmt::format("{}: {}", listing.root, s.message()));
    }
    int64_t label = -1;
    if (labels == FileLabels::kFolder) {
      const size_t slash = path.find('/');
      if (slash == std::string::npos) {
        ++unlabeled;
        continue;
      }
      label = classes.emplace(path.substr(0, slash), 0).first->second;
    }
    listing.files.push_back({.path = std::move(path),
                             .size = object.size,
                             .etag = ObjectVersion(object),
                             .label = label});
  }
  if (unlabeled > 0) {
    Log().warn("{}: {} file(s) directly under the root have no class folder and are left out",
               listing.root, unlabeled);
  }
  std::sort(listing.files.begin(), listing.files.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  if (labels == FileLabels::kFolder) {
    int64_t rank = 0;
    for (auto& [name, label] : classes) {
      listing.classes.push_back(name);
      label = rank++;
    }
    for (FileEntry& file : listing.files) {
      file.label = classes.at(file.path.substr(0, file.path.find('/')));
    }
  }
  return listing;
}

std::string SerializeListing(const Listing& listing) {
  nlohmann::json files = nlohmann::json::array();
  for (const FileEntry& f : listing.files) files.push_back({f.path, f.size, f.etag, f.label});
  const nlohmann::json doc = {{"version", kListingVersion},
                              {"root", listing.root},
                              {"labels", LabelName(listing.labels)},
                              {"extensions", listing.extensions},
                              {"listed_at", listing.listed_at_s},
                              {"classes", listing.classes},
                              {"files", std::move(files)}};
  return doc.dump();
}

namespace {

// nlohmann's get<int> of a float or an out-of-range number is undefined behaviour (found by
// fuzz/storage_fuzzer.cc): numbers are checked for kind and range first.
template <typename T>
T IntegerOf(const nlohmann::json& value, std::string_view what) {
  const bool fits =
      std::is_signed_v<T>
          ? (value.is_number_unsigned() ? value.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)
                                        : value.is_number_integer())
          : value.is_number_unsigned();
  if (!fits) {
    throw nlohmann::json::type_error::create(
        302, fmt::format("{} must be a whole number in range, not {}", what, value.dump()),
        nullptr);
  }
  return value.get<T>();
}

std::string StringOf(const nlohmann::json& value, std::string_view what) {
  if (!value.is_string()) {
    throw nlohmann::json::type_error::create(
        302, fmt::format("{} must be a string, not {}", what, value.dump()), nullptr);
  }
  return value.get<std::string>();
}

std::vector<std::string> StringsOf(const nlohmann::json& value, std::string_view what) {
  if (!value.is_array()) {
    throw nlohmann::json::type_error::create(
        302, fmt::format("{} must be a list of strings, not {}", what, value.dump()), nullptr);
  }
  std::vector<std::string> out;
  for (const auto& item : value) out.push_back(StringOf(item, what));
  return out;
}

}  // namespace

Result<Listing> ParseListing(std::string_view text, std::string_view origin) {
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    if (IntegerOf<int64_t>(doc.at("version"), "version") != kListingVersion) {
      return DataLossError(fmt::format("{}: listing version {} is not {}", origin,
                                       doc.at("version").dump(), kListingVersion));
    }
    Listing listing;
    listing.root = StringOf(doc.at("root"), "root");
    listing.labels =
        StringOf(doc.at("labels"), "labels") == "folder" ? FileLabels::kFolder : FileLabels::kNone;
    listing.extensions = StringsOf(doc.at("extensions"), "extensions");
    listing.listed_at_s = IntegerOf<int64_t>(doc.at("listed_at"), "listed_at");
    listing.classes = StringsOf(doc.at("classes"), "classes");
    const auto& files = doc.at("files");
    if (!files.is_array()) {
      return DataLossError(fmt::format("{}: `files` is not a list", origin));
    }
    listing.files.reserve(files.size());
    for (const auto& f : files) {
      FileEntry entry{.path = StringOf(f.at(0), "a path"),
                      .size = IntegerOf<uint64_t>(f.at(1), "a size"),
                      .etag = StringOf(f.at(2), "an etag"),
                      .label = IntegerOf<int64_t>(f.at(3), "a label")};
      // The file is ours, but a cache folder can be edited: the same rules as a fresh listing.
      FERRY_RETURN_IF_ERROR(ValidateBasename(entry.path));
      if (entry.label < -1 || entry.label >= static_cast<int64_t>(listing.classes.size())) {
        return DataLossError(fmt::format("{}: {} has label {} of {} classes", origin, entry.path,
                                         entry.label, listing.classes.size()));
      }
      listing.files.push_back(std::move(entry));
    }
    return listing;
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(fmt::format("{}: not a ferry file listing: {}", origin, e.what()));
  }
}

bool SameQuery(const Listing& stored, std::string_view root_url, FileLabels labels,
               const std::vector<std::string>& extensions) {
  return stored.root == root_url && stored.labels == labels && stored.extensions == extensions;
}

std::vector<std::string> ChangedFiles(const Listing& before, const Listing& after) {
  std::unordered_map<std::string_view, const FileEntry*> now;
  now.reserve(after.files.size());
  for (const FileEntry& f : after.files) now.emplace(f.path, &f);
  std::vector<std::string> changed;
  for (const FileEntry& f : before.files) {
    auto it = now.find(f.path);
    if (it == now.end() || it->second->size != f.size || it->second->etag != f.etag) {
      changed.push_back(f.path);
    }
  }
  return changed;
}

}  // namespace ferry::internal_files
