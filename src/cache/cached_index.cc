#include "cache/cached_index.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>

#include "base/file_util.h"
#include "base/human_size.h"
#include "base/log.h"
#include "cache/file_lock.h"
#include "cache/shard_downloader.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/local_dataset.h"
#include "storage/http/http_types.h"
#include "storage/object_key.h"

namespace ferry {
namespace internal_cache {

namespace fs = std::filesystem;

Result<std::optional<CacheOrigin>> ReadCacheOrigin(const CacheLayout& layout) {
  const fs::path path = layout.OriginPath();
  auto text = ReadFileToString(path);
  if (!text) {
    if (text.error().code() == StatusCode::kNotFound) return std::optional<CacheOrigin>();
    return text.error();
  }
  try {
    const nlohmann::json json = nlohmann::json::parse(*text);
    return std::optional<CacheOrigin>(
        CacheOrigin{.remote = json.at("remote").get<std::string>(),
                    .index_version = json.at("index_version").get<std::string>()});
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(fmt::format("{}: not a ferry cache record: {}", path.string(), e.what()));
  }
}

Status WriteCacheOrigin(const CacheLayout& layout, const CacheOrigin& origin) {
  const fs::path path = layout.OriginPath();
  FERRY_RETURN_IF_ERROR(CreateCacheFolders(path.parent_path()));
  const nlohmann::json json = {{"remote", origin.remote}, {"index_version", origin.index_version}};
  return WriteFileAtomically(path, json.dump() + "\n", Modes().file);
}

std::vector<std::string> FilesNoLongerDescribed(const DatasetDescription& before,
                                                const DatasetDescription& after) {
  std::map<std::string_view, const FileInfo*> described;
  for (const ShardDescription& shard : after.shards) {
    for (const FileInfo* form : shard.all_forms()) described[form->basename] = form;
  }
  const auto same = [](const FileInfo& old_file, const FileInfo& new_file) {
    if (old_file.bytes != new_file.bytes) return false;
    for (const auto& [algorithm, digest] : old_file.hashes) {
      if (const std::string* other = new_file.FindHash(algorithm); other && *other == digest) {
        return true;
      }
    }
    return false;  // no digest in common: a rewritten shard of the same size cannot be told apart
  };
  std::vector<std::string> out;
  for (const ShardDescription& shard : before.shards) {
    for (const FileInfo* file : shard.all_forms()) {
      auto it = described.find(file->basename);
      if (it == described.end() || !same(*file, *it->second)) out.push_back(file->basename);
    }
  }
  return out;
}

namespace {

// Where the error does not already name the URL, it is added.
Status NamingUrl(const Status& error, const std::string& url) {
  return error.message().find(url) == std::string::npos ? error.WithContext(url) : error;
}

// Replaces the cached index with `text` (the remote's, version `version`), dropping the shard
// files the old one described and the new one does not; under cache.lock.
Status Replace(const CacheLayout& layout, const std::string& remote_url, const std::string& text,
               const DatasetDescription& index, const std::string& version) {
  FERRY_RETURN_IF_ERROR(layout.CreateLocksDir());
  FERRY_ASSIGN_OR_RETURN(FileLock lock,
                         FileLock::Lock(layout.CacheLockPath(), LockMode::kExclusive));
  // Another process opening the folder at the same time may have done it already.
  auto cached = ReadFileToString(layout.IndexPath());
  if (cached && *cached == text) return WriteCacheOrigin(layout, {remote_url, version});
  if (cached) {
    if (auto old = ParseIndexFile(*cached, layout.IndexPath().string())) {
      uint64_t dropped_bytes = 0;
      size_t dropped = 0;
      for (const std::string& name : FilesNoLongerDescribed(*old, index)) {
        std::error_code ec;
        const fs::path path = layout.FilePath(name);
        const uintmax_t bytes = fs::file_size(path, ec);
        if (ec) continue;  // not cached
        // A reader of the old version that has it open keeps its mapping; the name goes.
        if (fs::remove(path, ec)) {
          ++dropped;
          dropped_bytes += bytes;
        }
      }
      Log().warn(
          "cache: {}: the index.json of {} changed since it was cached; {} cached shard "
          "files ({}) that it no longer describes were dropped",
          layout.root().string(), remote_url, dropped, FormatBytes(dropped_bytes));
    }
  }
  FERRY_RETURN_IF_ERROR(WriteFileAtomically(layout.IndexPath(), text, Modes().file));
  return WriteCacheOrigin(layout, {remote_url, version});
}

}  // namespace

}  // namespace internal_cache

Result<DatasetDescription> LoadIndex(ObjectStore* remote, const std::string& remote_prefix,
                                     const std::filesystem::path& local,
                                     const LoadIndexOptions& options) {
  using internal_cache::CacheLayout;
  if (remote == nullptr) return ReadLocalIndex(local);
  const CacheLayout layout(local);
  const std::string key = JoinKey(remote_prefix, "index.json");
  const std::string url = http::RedactUrl(remote->ToUrl(key));
  const std::string remote_url = http::RedactUrl(remote->ToUrl(remote_prefix));

  FERRY_ASSIGN_OR_RETURN(std::optional<internal_cache::CacheOrigin> origin,
                         internal_cache::ReadCacheOrigin(layout));
  if (origin && origin->remote != remote_url) {
    return FailedPreconditionError(fmt::format(
        "{}: this cache folder holds the dataset of {}, not {}: give each dataset a cache folder "
        "of its own (`local`; in Python, leaving `local` unset gives each remote a folder named "
        "after it)",
        local.string(), origin->remote, remote_url));
  }
  auto cached = ReadFileToString(layout.IndexPath());
  if (!cached && cached.error().code() != StatusCode::kNotFound) return cached.error();
  if (options.offline) {
    if (!cached) {
      return NotFoundError(fmt::format(
          "{}: no cached index.json of {} to read offline (open it once with the remote "
          "reachable)",
          local.string(), remote_url));
    }
    if (!origin) {
      Log().warn("cache: {}: read offline, its index.json cannot be told to be {}'s",
                 local.string(), remote_url);
    }
    return ParseIndexFile(*cached, layout.IndexPath().string());
  }

  auto head = remote->Head(key);
  if (!head) {
    if (head.error().code() == StatusCode::kNotFound) {
      // The store's own words (a local path's "No such file or directory") come first.
      return NotFoundError(fmt::format(
          "{}: no index.json there ({}), so it is not an MDS dataset: a folder of files is read "
          "as it is with FileDataset (ferry.FileDataset), or converted once with `ferry convert "
          "{} OUT`",
          remote_url, head.error().message(), remote_url));
    }
    Status error = internal_cache::NamingUrl(head.error(), url);
    if (cached) {
      error = error.WithContext(fmt::format(
          "checking the cached copy in {} (read it without the remote: offline=True, --offline)",
          local.string()));
    }
    return error;
  }
  const std::string version = ObjectVersion(*head);
  if (cached && origin && !version.empty() && origin->index_version == version) {
    return ParseIndexFile(*cached, layout.IndexPath().string());
  }

  // New, changed or never recorded: fetch it, with the version of what was read.
  std::string text;
  auto read = remote->Read(key, {}, [&](std::string_view chunk) {
    text.append(chunk);
    return Status::Ok();
  });
  if (!read) return internal_cache::NamingUrl(read.error(), url);
  // Parsed before it lands: a broken remote index never becomes the local copy.
  FERRY_ASSIGN_OR_RETURN(DatasetDescription index, ParseIndexFile(text, url));
  FERRY_RETURN_IF_ERROR(internal_cache::CreateCacheFolders(local));
  FERRY_RETURN_IF_ERROR(
      internal_cache::Replace(layout, remote_url, text, index, ObjectVersion(*read)));
  Log().debug("cache: fetched {} into {}", url, local.string());
  return index;
}

}  // namespace ferry
