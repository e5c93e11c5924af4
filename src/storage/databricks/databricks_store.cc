#include "storage/databricks/databricks_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"
#include "storage/databricks/databricks_files_api.h"
#include "storage/http/resumable_get.h"
#include "storage/store_cache.h"

namespace ferry::internal_databricks {
namespace {

using internal_storage::AccessToken;

class DatabricksVolumeStore final : public ObjectStore {
 public:
  DatabricksVolumeStore(DatabricksConfig config, std::string volume, DatabricksStoreOptions options,
                        std::shared_ptr<http::Transport> transport)
      : config_(std::move(config)),
        volume_(std::move(volume)),
        options_(std::move(options)),
        transport_(std::move(transport)) {}

  std::string_view scheme() const override { return "dbfs"; }
  std::string ToUrl(std::string_view key) const override { return VolumeUrl(volume_, key); }

  Result<ObjectInfo> Head(std::string_view key) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = FilesUrl(config_.host, PathOf(key));
    const std::string name = ToUrl(key);
    auto transport = GetTransport();
    return Retry(options_.retry, [&]() -> Result<ObjectInfo> {
      AccessToken used;
      http::Request request = NewRequest("HEAD", url);
      FERRY_RETURN_IF_ERROR(Authorize(request, used));
      FERRY_ASSIGN_OR_RETURN(http::Response response, transport->Execute(std::move(request)));
      if (response.status < 300) return http::ObjectInfoFromHeaders(response.headers, key, name);
      // A HEAD's reply has no body: ask again as a GET of one byte for the service's message.
      if (response.status == 401 || response.status == 403) {
        http::Request get = NewRequest("GET", url);
        get.headers.Set("Range", "bytes=0-0");
        AccessToken again;
        if (Authorize(get, again).ok()) {
          if (auto reply = http::FetchErrorDocument(*transport, std::move(get), response.status)) {
            return ErrorOf(*reply, name, again);
          }
        }
      }
      return ErrorOf(response, name, used);
    });
  }

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = FilesUrl(config_.host, PathOf(key));
    auto transport = GetTransport();
    AccessToken used;  // of the latest attempt, which is the one map_error sees
    http::ResumableGetOptions get;
    get.url = ToUrl(key);
    get.retry = options_.retry;
    get.build = [&](const http::GetAttempt&, http::Headers headers) -> Result<http::Request> {
      http::Request request = NewRequest("GET", url);
      request.headers = std::move(headers);
      FERRY_RETURN_IF_ERROR(Authorize(request, used));
      return request;
    };
    get.map_error = [&](const http::Response& response) {
      return ErrorOf(response, get.url, used);
    };
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, http::ResumableGet(*transport, get, range, sink));
    info.key = std::string(key);
    return info;
  }

  Status Write(std::string_view key, const ByteSource& source) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string name = ToUrl(key);
    if (key.ends_with('/')) {
      return InvalidArgumentError(fmt::format("{}: a key ending in '/' names a folder", name));
    }
    if (source.size > kMaxUploadBytes) {
      return InvalidArgumentError(fmt::format(
          "{}: {} bytes is more than the 5 GiB the Databricks Files API takes in one file; split "
          "the data into smaller shards (size_limit)",
          name, source.size));
    }
    const std::string url = FilesUrl(config_.host, PathOf(key)) + "?overwrite=true";
    auto transport = GetTransport();
    return Retry(options_.retry, [&]() -> Status {
      AccessToken used;
      http::Request request = NewRequest("PUT", url);
      request.headers.Set("Content-Type", "application/octet-stream");
      request.body = source;
      FERRY_RETURN_IF_ERROR(Authorize(request, used));
      FERRY_ASSIGN_OR_RETURN(http::Response response, transport->Execute(std::move(request)));
      if (response.status >= 300) return ErrorOf(response, name, used);
      return Status::Ok();
    });
  }

  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    // The folder the prefix ends in is listed whole and filtered by the rest of the prefix
    // ("a/b/c" lists a/b/ and keeps the names that start with c); the folders found below it
    // match as a whole and, when recursive, are listed in turn - up to
    // options_.list_concurrency at once, since each is a round trip (an ImageFolder of 1,000
    // classes is 1,000 of them).
    const size_t cut = prefix.rfind('/');
    ListResult result;
    Mutex mu;
    std::condition_variable_any cv;
    std::vector<std::string> pending{
        cut == std::string_view::npos ? std::string() : std::string(prefix.substr(0, cut))};
    int active = 0;
    Status failure;
    auto work = [&] {
      MutexLock lock(mu);
      for (;;) {
        cv.wait(lock, [&] { return !pending.empty() || active == 0 || !failure.ok(); });
        if (pending.empty() || !failure.ok()) {
          cv.notify_all();  // nothing left for anyone: every worker ends
          return;
        }
        const std::string folder = std::move(pending.back());
        pending.pop_back();
        ++active;
        lock.unlock();
        auto entries = ListFolder(folder);
        lock.lock();
        --active;
        if (!entries) {
          if (failure.ok()) failure = entries.status();
          cv.notify_all();
          continue;
        }
        for (DirectoryEntry& entry : *entries) {
          auto key = KeyOf(entry.path, folder);
          if (!key) {
            if (failure.ok()) failure = key.status();
            break;
          }
          if (!key->starts_with(prefix)) continue;
          if (entry.is_directory) {
            if (recursive) {
              pending.push_back(std::move(*key));
            } else {
              result.prefixes.push_back(*key + "/");
            }
            continue;
          }
          ObjectInfo info;
          info.key = std::move(*key);
          info.size = entry.size;
          info.mtime = entry.mtime;
          result.objects.push_back(std::move(info));
        }
        cv.notify_all();
      }
    };
    {
      std::vector<std::jthread> workers;
      for (int i = 1; i < std::max(1, options_.list_concurrency); ++i) workers.emplace_back(work);
      work();
    }
    FERRY_RETURN_IF_ERROR(failure);
    std::sort(result.objects.begin(), result.objects.end(),
              [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    std::sort(result.prefixes.begin(), result.prefixes.end());
    return result;
  }

  Status Remove(std::string_view key) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = FilesUrl(config_.host, PathOf(key));
    const std::string name = ToUrl(key);
    auto transport = GetTransport();
    return Retry(options_.retry, [&]() -> Status {
      AccessToken used;
      http::Request request = NewRequest("DELETE", url);
      FERRY_RETURN_IF_ERROR(Authorize(request, used));
      FERRY_ASSIGN_OR_RETURN(http::Response response, transport->Execute(std::move(request)));
      if (response.status == 404) return Status::Ok();  // gone, perhaps by our earlier attempt
      if (response.status >= 300) return ErrorOf(response, name, used);
      return Status::Ok();
    });
  }

 private:
  std::shared_ptr<http::Transport> GetTransport() const {
    return transport_ ? transport_ : http::DefaultTransport();
  }

  static http::Request NewRequest(std::string method, std::string url) {
    http::Request request;
    request.method = std::move(method);
    request.url = std::move(url);
    return request;
  }

  // The absolute path of `key` ("/Volumes/c/s/v/key"; the volume itself for "").
  std::string PathOf(std::string_view key) const {
    std::string path = volume_;
    if (!key.empty()) path += "/" + std::string(key);
    while (path.ends_with('/')) path.pop_back();
    return path;
  }

  // The key of an entry the service listed in `folder`: its path less the volume's.
  Result<std::string> KeyOf(const std::string& path, const std::string& folder) const {
    const std::string base = PathOf(folder) + "/";
    if (!path.starts_with(base) || path.size() == base.size()) {
      return DataLossError(
          fmt::format("{}: the listing names {}, which is not in the folder", ToUrl(folder), path));
    }
    return path.substr(volume_.size() + 1);
  }

  Status CheckKey(std::string_view key) const {
    if (key.empty()) {
      return InvalidArgumentError(fmt::format("{}: an empty key names no file", ToUrl(key)));
    }
    if (auto why = BadVolumePathName(key)) {
      return InvalidArgumentError(fmt::format("{}: {}", ToUrl(key), *why));
    }
    return Status::Ok();
  }

  // Done per attempt, so that a retry carries the provider's current token; `used` is what the
  // request carried, so that a 401 expires exactly that token.
  Status Authorize(http::Request& request, AccessToken& used) const {
    auto token = config_.token_provider->Current();
    if (!token) return token.status();
    used = std::move(*token);
    request.headers.Set("Authorization", "Bearer " + used.access_token);
    return Status::Ok();
  }

  Status ErrorOf(const http::Response& response, std::string_view name,
                 const AccessToken& used) const {
    if (response.status == 401 && config_.expiring) {
      config_.token_provider->Expire(used);
      return UnavailableError(fmt::format(
          "{}: HTTP 401: the workspace refused the token from {} (a new one is fetched)", name,
          config_.token_provider->source()));
    }
    std::string hint;
    if (response.status == 401) {
      hint = fmt::format("(check the {} for {}: expired, revoked, or of another workspace)",
                         config_.token_provider->source(), config_.host);
    } else if (response.status == 403) {
      hint = fmt::format(
          "(the identity needs USE CATALOG, USE SCHEMA and READ VOLUME on {}, and WRITE VOLUME to "
          "write)",
          volume_);
    }
    return DatabricksErrorToStatus(response, name, hint);
  }

  // Every entry of `folder` (a key; "" for the volume), page by page; a missing folder is empty.
  Result<std::vector<DirectoryEntry>> ListFolder(const std::string& folder) const {
    const std::string name = ToUrl(folder.empty() ? folder : folder + "/");
    auto transport = GetTransport();
    std::vector<DirectoryEntry> entries;
    std::string token;
    for (;;) {
      const std::string url =
          DirectoriesUrl(config_.host, PathOf(folder), token, options_.list_page_size);
      auto page = Retry(options_.retry, [&]() -> Result<std::optional<DirectoryPage>> {
        AccessToken used;
        http::Request request = NewRequest("GET", url);
        FERRY_RETURN_IF_ERROR(Authorize(request, used));
        FERRY_ASSIGN_OR_RETURN(http::Response response, transport->Execute(std::move(request)));
        if (response.status == 404 && token.empty() && !folder.empty()) {
          return std::optional<DirectoryPage>();  // no such folder: nothing under the prefix
        }
        if (response.status >= 300) return ErrorOf(response, name, used);
        FERRY_ASSIGN_OR_RETURN(DirectoryPage parsed, ParseDirectoryPage(response.body, name));
        return std::optional<DirectoryPage>(std::move(parsed));
      });
      if (!page) return page.status();
      if (!*page) return entries;
      for (DirectoryEntry& entry : (*page)->entries) entries.push_back(std::move(entry));
      if ((*page)->next_page_token.empty()) return entries;
      if ((*page)->next_page_token == token) {
        return DataLossError(fmt::format("{}: the listing repeats its page token", name));
      }
      token = std::move((*page)->next_page_token);
    }
  }

  const DatabricksConfig config_;
  const std::string volume_;
  const DatabricksStoreOptions options_;
  const std::shared_ptr<http::Transport> transport_;  // nullptr: the default transport
};

}  // namespace

std::shared_ptr<ObjectStore> MakeDatabricksStore(DatabricksConfig config, std::string volume,
                                                 DatabricksStoreOptions options,
                                                 std::shared_ptr<http::Transport> transport) {
  return std::make_shared<DatabricksVolumeStore>(std::move(config), std::move(volume),
                                                 std::move(options), std::move(transport));
}

Result<StoreAndKey> OpenDatabricksUrl(std::string_view url, const EnvLookup& env,
                                      DatabricksStoreOptions options,
                                      std::shared_ptr<http::Transport> transport) {
  FERRY_ASSIGN_OR_RETURN(VolumePath path, ParseVolumeUrl(url));
  FERRY_ASSIGN_OR_RETURN(DatabricksConfig config,
                         LoadDatabricksConfig(env, {}, nullptr, transport));
  return StoreAndKey{MakeDatabricksStore(std::move(config), std::move(path.volume),
                                         std::move(options), std::move(transport)),
                     std::move(path.key)};
}

Result<StoreAndKey> OpenCachedDatabricksUrl(std::string_view url, const EnvLookup& env) {
  FERRY_ASSIGN_OR_RETURN(VolumePath path, ParseVolumeUrl(url));
  if (auto folder = FuseVolumeFolder(path.volume, env)) {
    // On a cluster the volume is mounted: read it as files, with no requests and no credentials.
    Log().debug("{}: reading the volume's FUSE folder {}", VolumeUrl(path.volume, path.key),
                folder->string());
    return OpenUrl(path.key.empty() ? folder->string() : folder->string() + "/" + path.key);
  }
  FERRY_ASSIGN_OR_RETURN(DatabricksConfig config, LoadDatabricksConfig(env));
  // The credentials themselves, not only the variables: a profile's token rotated in the file
  // (read again at every open) gets a store that uses the new one.
  const std::string cache_key =
      fmt::format("dbfs\n{}\n{}\n{}\n{}", path.volume, config.host, config.token_provider->source(),
                  config.credential_identity) +
      EnvFingerprint(DatabricksEnvironmentVariables(), env);
  FERRY_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, CachedStore(cache_key, [&] {
                           return Result<std::shared_ptr<ObjectStore>>(
                               MakeDatabricksStore(std::move(config), path.volume));
                         }));
  return StoreAndKey{std::move(store), std::move(path.key)};
}

namespace {

Result<StoreAndKey> OpenDatabricksUrlFromEnvironment(std::string_view url) {
  return OpenCachedDatabricksUrl(url);
}

const StoreRegistration kDbfsRegistration("dbfs", &OpenDatabricksUrlFromEnvironment,
                                          UrlForm::kAbsolutePath);

}  // namespace
}  // namespace ferry::internal_databricks
