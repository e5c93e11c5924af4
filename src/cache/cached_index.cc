#include "cache/cached_index.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>

#include "base/ascii.h"
#include "base/file_util.h"
#include "base/human_size.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "cache/file_lock.h"
#include "cache/shard_downloader.h"
#include "cache/tar_shard_list.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/local_dataset.h"
#include "format/binary_index.h"
#include "format/webdataset_index.h"
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
    CacheOrigin origin{.remote = json.at("remote").get<std::string>(),
                       .index_version = json.at("index_version").get<std::string>()};
    if (json.contains("shard_versions")) {
      origin.shard_versions = json.at("shard_versions").get<std::map<std::string, std::string>>();
    }
    return std::optional<CacheOrigin>(std::move(origin));
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(fmt::format("{}: not a ferry cache record: {}", path.string(), e.what()));
  }
}

Status WriteCacheOrigin(const CacheLayout& layout, const CacheOrigin& origin) {
  const fs::path path = layout.OriginPath();
  FERRY_RETURN_IF_ERROR(CreateCacheFolders(path.parent_path()));
  nlohmann::json json = {{"remote", origin.remote}, {"index_version", origin.index_version}};
  if (!origin.shard_versions.empty()) json["shard_versions"] = origin.shard_versions;
  return WriteFileAtomically(path, json.dump() + "\n", Modes().file);
}

namespace {

void WriteBinaryIndexOf(const CacheLayout& layout, const internal_format::BinaryIndexSource& source,
                        const DatasetDescription& index) {
  const fs::path path = layout.BinaryIndexPath();
  Status written = CreateCacheFolders(path.parent_path());
  if (written.ok()) {
    written =
        WriteFileAtomically(path, internal_format::EncodeBinaryIndex(index, source), Modes().file);
  }
  if (!written.ok()) {
    Log().debug("cache: {}: the binary index is not written, each process parses index.json: {}",
                layout.root().string(), written.ToString());
  }
}

}  // namespace

Result<DatasetDescription> ReadCachedIndex(const CacheLayout& layout) {
  const fs::path json_path = layout.IndexPath();
  FERRY_ASSIGN_OR_RETURN(const internal_format::BinaryIndexSource source,
                         internal_format::DescribeIndexFile(json_path));
  const fs::path binary_path = layout.BinaryIndexPath();
  if (auto binary = MappedFile::Open(binary_path)) {
    auto decoded = internal_format::DecodeBinaryIndex(binary->data(), source, binary_path.string());
    if (decoded) return decoded;
    // Of an index.json since replaced: normal. Damaged: a power cut, as the cache does not
    // fsync; the JSON is the truth either way.
    if (decoded.error().code() == StatusCode::kDataLoss) {
      Log().warn("cache: {}; parsing index.json again", decoded.error().message());
    }
  }
  // The binary form is made of the bytes parsed, which another process may have replaced since
  // they were described.
  FERRY_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(json_path));
  FERRY_ASSIGN_OR_RETURN(DatasetDescription index, ParseIndexFile(text, json_path.string()));
  WriteBinaryIndex(layout, text, index);
  return index;
}

void WriteBinaryIndex(const CacheLayout& layout, std::string_view text,
                      const DatasetDescription& index) {
  WriteBinaryIndexOf(layout, internal_format::DescribeIndexSource(text), index);
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

Result<FileLock> LockCacheFolder(const CacheLayout& layout) {
  FERRY_RETURN_IF_ERROR(layout.CreateLocksDir());
  return FileLock::Lock(layout.CacheLockPath(), LockMode::kExclusive);
}

namespace {

// Where the error does not already name the URL, it is added.
Status NamingUrl(const Status& error, const std::string& url) {
  return error.message().find(url) == std::string::npos ? error.WithContext(url) : error;
}

// Deletes the cached files named `names` (those there), logging `why` with the count; the caller
// holds cache.lock.
void DropFiles(const CacheLayout& layout, const std::vector<std::string>& names,
               std::string_view why) {
  uint64_t dropped_bytes = 0;
  size_t dropped = 0;
  for (const std::string& name : names) {
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
  if (dropped > 0) {
    Log().warn("cache: {}: {}; {} cached shard files ({}) were dropped", layout.root().string(),
               why, dropped, FormatBytes(dropped_bytes));
  }
}

// Replaces the cached index with `text` (the remote's, version `version`), dropping the shard
// files the old one described and the new one does not; the caller holds cache.lock.
Status Replace(const CacheLayout& layout, const std::string& remote_url, const std::string& text,
               const DatasetDescription& index, const std::string& version) {
  // The copy is told by its size and digest, as the binary form is: it is not read whole.
  auto cached = internal_format::DescribeIndexFile(layout.IndexPath());
  if (cached && *cached == internal_format::DescribeIndexSource(text)) {
    return WriteCacheOrigin(layout, {remote_url, version});
  }
  if (cached) {
    if (auto old = ReadCachedIndex(layout)) {
      DropFiles(layout, FilesNoLongerDescribed(*old, index),
                fmt::format("the index.json of {} changed since it was cached", remote_url));
    }
  }
  FERRY_RETURN_IF_ERROR(WriteFileAtomically(layout.IndexPath(), text, Modes().file));
  WriteBinaryIndex(layout, text, index);
  return WriteCacheOrigin(layout, {remote_url, version});
}

// The cached files of a tar shard named `name` in a listing: the file, and the tar inside a
// gzipped one.
void AddTarFiles(const std::string& name, std::vector<std::string>& out) {
  out.push_back(name);
  if (auto tar = internal_format::TarOfGzip(name)) out.push_back(*tar);
}

// The shard list of a remote folder of tars without index.json (see the header): the cached one
// while the folder's listing is the one it was made from; else made again, after dropping the
// cached files of the shards that are gone or changed (or that no record vouches for).
Result<DatasetDescription> LoadTarShardList(ObjectStore& remote, const std::string& prefix,
                                            const CacheLayout& layout,
                                            const std::string& remote_url,
                                            const std::optional<CacheOrigin>& origin,
                                            bool has_cached, std::vector<ObjectInfo> tars,
                                            const LoadIndexOptions& options) {
  const std::string version = TarListingVersion(tars);
  std::map<std::string, std::string> versions = TarVersions(tars, prefix);
  if (has_cached && origin && origin->index_version == version) return ReadCachedIndex(layout);
  FERRY_RETURN_IF_ERROR(CreateCacheFolders(layout.root()));
  {
    FERRY_ASSIGN_OR_RETURN(FileLock lock, LockCacheFolder(layout));
    // Re-read under the lock: another process may have made the list, or started to.
    FERRY_ASSIGN_OR_RETURN(const std::optional<CacheOrigin> now, ReadCacheOrigin(layout));
    const std::map<std::string, std::string> none;
    const auto& recorded = now && now->remote == remote_url ? now->shard_versions : none;
    std::vector<std::string> stale;
    for (const auto& [name, shard_version] : versions) {
      auto it = recorded.find(name);
      if (it == recorded.end() || it->second != shard_version || shard_version.empty()) {
        AddTarFiles(name, stale);
      }
    }
    if (has_cached) {
      if (auto old = ReadCachedIndex(layout)) {
        for (const ShardDescription& shard : old->shards) {
          const FileInfo& listed = shard.zip_data ? *shard.zip_data : shard.raw_data;
          if (versions.contains(listed.basename)) continue;
          for (const FileInfo* form : shard.all_forms()) stale.push_back(form->basename);
        }
      }
    }
    DropFiles(layout, stale,
              fmt::format("the tar shards of {} changed since they were cached", remote_url));
    // What the files cached from here on are, before they are fetched: a reading cut short
    // leaves them vouched for.
    FERRY_RETURN_IF_ERROR(WriteCacheOrigin(layout, {remote_url, "", versions}));
  }
  ShardCacheOptions cache_options = options.tar_scan;
  cache_options.local = layout.root();
  FERRY_ASSIGN_OR_RETURN(
      DatasetDescription list,
      ScanTarShards(&remote, prefix, tars, cache_options, options.tar_scan_jobs));
  const std::string text = internal_format::SerializeWebDatasetIndex(list);
  FERRY_ASSIGN_OR_RETURN(FileLock lock, LockCacheFolder(layout));
  FERRY_RETURN_IF_ERROR(WriteFileAtomically(layout.IndexPath(), text, Modes().file));
  FERRY_RETURN_IF_ERROR(WriteCacheOrigin(layout, {remote_url, version, std::move(versions)}));
  Log().info("cache: {}: listed {} tar shards of {} in its index.json", layout.root().string(),
             list.shards.size(), remote_url);
  FERRY_ASSIGN_OR_RETURN(DatasetDescription listed,
                         ParseIndexFile(text, layout.IndexPath().string()));
  WriteBinaryIndex(layout, text, listed);
  return listed;
}

}  // namespace

}  // namespace internal_cache

namespace {

// index.json fetches in all, when the replies are not index.json (cached_index.h).
constexpr int kIndexFetches = 3;

// `error` (index.json's parse error), saying what came instead where that is plain.
Status IndexFailure(const Status& error, std::string_view text) {
  const std::string start = AsciiLower(TrimAsciiWhitespace(text.substr(0, 512)));
  if (start.starts_with("<!doctype html") || start.starts_with("<html")) {
    return Status(error.code(), error.message() +
                                    " (the store answered with an HTML page, not index.json: a "
                                    "proxy, portal or load balancer in the way?)");
  }
  return error;
}

}  // namespace

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
  std::error_code stat_error;
  const bool cached = std::filesystem::exists(layout.IndexPath(), stat_error);
  if (stat_error) return ErrnoToStatus(stat_error.value(), "stat", layout.IndexPath());
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
    return internal_cache::ReadCachedIndex(layout);
  }

  if (!options.tar_names.empty()) {
    FERRY_ASSIGN_OR_RETURN(
        std::vector<ObjectInfo> tars,
        internal_cache::SelectTarShards(*remote, remote_prefix, remote_url, options.tar_names));
    return internal_cache::LoadTarShardList(*remote, remote_prefix, layout, remote_url, origin,
                                            cached, std::move(tars), options);
  }
  // No index.json there: a folder of tars, or not a dataset.
  const auto missing = [&](const Status& error) -> Result<DatasetDescription> {
    auto tars = internal_cache::ListTarShards(*remote, remote_prefix, remote_url);
    if (tars) {
      return internal_cache::LoadTarShardList(*remote, remote_prefix, layout, remote_url, origin,
                                              cached, std::move(*tars), options);
    }
    if (tars.error().code() != StatusCode::kNotFound) {
      return internal_cache::NamingUrl(tars.error(), remote_url);
    }
    // The store's own words (a local path's "No such file or directory") come first.
    return NotFoundError(fmt::format(
        "{}: no index.json there ({}) and no .tar shards, so it is not a dataset: a folder "
        "of files is read as it is with FileDataset (ferry.FileDataset), or converted once "
        "with `ferry convert {} OUT`",
        remote_url, error.message(), remote_url));
  };
  // A cached copy is checked with a HEAD first; without one the GET's response gives the
  // version, a round trip sooner.
  if (cached && !options.index_version.empty()) {
    if (origin && origin->index_version == options.index_version) {
      return internal_cache::ReadCachedIndex(layout);
    }
  } else if (cached) {
    auto head = remote->Head(key);
    if (!head) {
      if (head.error().code() == StatusCode::kNotFound) return missing(head.error());
      return internal_cache::NamingUrl(head.error(), url)
          .WithContext(fmt::format(
              "checking the cached copy in {} (read it without the remote: offline=True, "
              "--offline)",
              local.string()));
    }
    const std::string version = ObjectVersion(*head);
    if (origin && !version.empty() && origin->index_version == version) {
      return internal_cache::ReadCachedIndex(layout);
    }
  }

  // New, changed or never recorded: fetched, with the version of what was read, by one process
  // of the node at a time (under cache.lock): the ranks and workers that open the folder at
  // once wait for the first, then find its copy - one GET and one parse per node, not one per
  // process. A folder made for it is removed again when the remote holds no dataset there (a
  // mistyped URL), which every process opening it finds alike; a transient failure keeps it.
  std::error_code ec;
  const bool folder_existed = std::filesystem::exists(local, ec);
  FERRY_RETURN_IF_ERROR(internal_cache::CreateCacheFolders(local));
  const auto undo_folder = [&] {
    if (!folder_existed) std::filesystem::remove_all(local, ec);
  };
  std::optional<internal_cache::FileLock> lock;
  {
    FERRY_ASSIGN_OR_RETURN(internal_cache::FileLock locked,
                           internal_cache::LockCacheFolder(layout));
    lock.emplace(std::move(locked));
  }
  FERRY_ASSIGN_OR_RETURN(const std::optional<internal_cache::CacheOrigin> now,
                         internal_cache::ReadCacheOrigin(layout));
  const bool fetched_meanwhile = now && now->remote == remote_url && !now->index_version.empty() &&
                                 (!origin || origin->index_version != now->index_version) &&
                                 std::filesystem::exists(layout.IndexPath(), ec);
  if (fetched_meanwhile) {
    if (!options.index_version.empty()) {
      if (options.index_version == now->index_version) {
        return internal_cache::ReadCachedIndex(layout);
      }
    } else if (auto head = remote->Head(key); head && ObjectVersion(*head) == now->index_version) {
      return internal_cache::ReadCachedIndex(layout);
    }
  }
  // A reply that is not index.json (cut short with a Content-Length that agrees, an HTML page
  // with 200, another range than asked) is fetched again; the same text twice is the object.
  std::string text, previous;
  auto fetch = [&] {
    text.clear();
    return remote->Read(key, {}, [&](std::string_view chunk) {
      text.append(chunk);
      return Status::Ok();
    });
  };
  auto read = fetch();
  int fetches = 1;
  // An error after more than one fetch says so: what came was not index.json every time.
  const auto fetched_times = [&](const Status& error) {
    return fetches == 1 ? error
                        : Status(error.code(),
                                 fmt::format("{} (fetched {} times)", error.message(), fetches));
  };
  std::optional<Result<DatasetDescription>> parsed;
  for (int attempt = 1; attempt < kIndexFetches; ++attempt) {
    if (read) {
      parsed = ParseIndexFile(text, url);
      if (*parsed || text == previous) break;
      Log().info("cache: fetching {} again: {}", url,
                 IndexFailure(parsed->error(), text).message());
    } else if (read.error().code() == StatusCode::kDataLoss) {
      Log().info("cache: fetching {} again: {}", url, read.error().message());
    } else {
      break;
    }
    previous = std::move(text);
    parsed.reset();
    read = fetch();
    ++fetches;
  }
  if (!read) {
    lock.reset();  // the listing of tars below takes it again
    if (read.error().code() == StatusCode::kNotFound && text.empty()) {
      auto listed = missing(read.error());
      // Not a dataset at all; tars read part-way stay cached for the next attempt.
      if (!listed && listed.error().code() == StatusCode::kNotFound) undo_folder();
      return listed;
    }
    return fetched_times(internal_cache::NamingUrl(read.error(), url));
  }
  // Parsed before it lands: a broken remote index never becomes the local copy.
  if (!parsed) parsed = ParseIndexFile(text, url);
  if (!*parsed) {
    lock.reset();
    undo_folder();  // not a dataset ferry reads, for any process
    return fetched_times(IndexFailure(parsed->error(), text));
  }
  FERRY_RETURN_IF_ERROR(internal_cache::Replace(
      layout, remote_url, text, **parsed,
      options.index_version.empty() ? ObjectVersion(*read) : options.index_version));
  Log().debug("cache: fetched {} into {}", url, local.string());
  return std::move(**parsed);
}

}  // namespace ferry
