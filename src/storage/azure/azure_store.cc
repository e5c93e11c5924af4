// AzureBlobStore: an ObjectStore over one container of the Azure Blob service (and Azurite), spoken
// as REST through http::Transport. Request signing is in azure_auth, URLs and credentials in
// azure_config, error mapping in azure_errors, header and XML parsing in azure_metadata.
//
//   Head    HEAD <blob>                          Content-Length, ETag, Last-Modified; when
//                                                refused (400, 403), GET <blob> with Range:
//                                                bytes=0-0 for the error's message
//   Read    GET <blob> with Range                through http::ResumableGet (resume on a break,
//                                                pinned to the first response's ETag)
//   Write   size <= single_put_limit: PUT <blob> with x-ms-blob-type: BlockBlob (Put Blob).
//           Larger:
//             1. cut the source into equal blocks (the last one shorter) and give each an id
//                (azure_metadata.h: same length for all, unique to this upload);
//             2. PUT <blob>?comp=block&blockid=<id> for each block, at most
//                max_blocks_in_flight at once through Transport::Submit, the body read straight
//                from the source; a block that fails transiently is retried on its own, after
//                its own backoff, while the others proceed;
//             3. once every block is stored, PUT <blob>?comp=blocklist with the ids in order
//                (Put Block List): the blob appears whole, or not at all. Blocks of a failed
//                upload are never committed and the service discards them.
//   List    GET <container>?restype=container&comp=list&prefix=..[&delimiter=/], following
//           NextMarker until it is empty; results are sorted by key.
//   Remove  DELETE <blob> (with its snapshots); BlobNotFound counts as success.
//
// Every request carries x-ms-version and is authorized (Shared Key, SAS, or an Entra ID bearer
// token from the config's provider) just before it is sent, so a retry is signed afresh. A reply
// saying the token expired (a clock behind the service's; a revoked token) drops it and counts as
// transient: the retry goes with a new one. Every request is idempotent and retried under the
// store's RetryPolicy. Error messages name the blob by its ferry URL (az://container/key, as the
// user wrote it; not the endpoint URL) and pass through AzureConfig::Redact on the way out.
//
// Thread-safety: all methods may run concurrently; the store holds only immutable state.
#include "storage/azure/azure_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "base/ascii.h"
#include "base/mutex.h"
#include "storage/azure/azure_auth.h"
#include "storage/azure/azure_errors.h"
#include "storage/azure/azure_metadata.h"
#include "storage/http/resumable_get.h"
#include "storage/http/store_checksum.h"
#include "storage/http/url_encoding.h"
#include "storage/store_cache.h"

namespace ferry::internal_azure {
namespace {

// The service's limit on blocks per blob.
constexpr uint64_t kMaxBlocks = 50'000;

std::string NewUploadId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}", rng());
}

// Bytes [offset, offset + size) of `source`, as a body of their own. `source` must outlive it.
ByteSource Slice(const ByteSource& source, uint64_t offset, uint64_t size) {
  ByteSource slice;
  slice.size = size;
  slice.read = [&source, offset, size](uint64_t at, char* buffer, size_t n) -> Result<size_t> {
    if (at >= size) return size_t{0};
    return source.read(offset + at, buffer, static_cast<size_t>(std::min<uint64_t>(n, size - at)));
  };
  return slice;
}

class AzureBlobStore final : public ObjectStore {
 public:
  AzureBlobStore(AzureConfig config, AzureStoreOptions options,
                 std::shared_ptr<http::Transport> transport)
      : config_(std::move(config)),
        options_(std::move(options)),
        transport_(std::move(transport)),
        scheme_(config_.url_prefix.substr(0, config_.url_prefix.find("://"))) {}

  std::string_view scheme() const override { return scheme_; }
  std::string ToUrl(std::string_view key) const override { return config_.ToUrl(key); }

  Result<ObjectInfo> Head(std::string_view key) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = config_.BlobUrl(key);
    const std::string name = ToUrl(key);
    auto transport = GetTransport();
    auto info = Retry(options_.retry, [&]() -> Result<ObjectInfo> {
      FERRY_ASSIGN_OR_RETURN(http::Response response, Send(*transport, NewRequest("HEAD", url)));
      if (response.status >= 300) return HeadError(*transport, response, url, name);
      return http::ObjectInfoFromHeaders(response.headers, key, name);
    });
    return Scrub(std::move(info), name);
  }

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = config_.BlobUrl(key);
    auto transport = GetTransport();
    http::ResumableGetOptions get;
    get.url = ToUrl(key);
    get.retry = options_.retry;
    // ResumableGet puts Range (and If-Match on a resumed attempt) in `headers`; the service
    // accepts the standard Range header, and it is signed in its own slot.
    get.build = [&](const http::GetAttempt&, http::Headers headers) -> Result<http::Request> {
      http::Request request = NewRequest("GET", url);
      request.headers = std::move(headers);
      FERRY_RETURN_IF_ERROR(Prepare(request));
      return request;
    };
    get.map_error = [&](const http::Response& response) { return ErrorOf(response, get.url); };
    get.describe = [](int status, const http::Headers& headers, ObjectInfo& info) {
      info.checksum = http::ChecksumFromAzureHeaders(status, headers);
    };
    auto info = http::ResumableGet(*transport, get, range, sink);
    if (!info) return Scrub(info.status(), get.url);
    info->key = std::string(key);
    return info;
  }

  Status Write(std::string_view key, const ByteSource& source) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    if (source.size <= options_.single_put_limit) return Scrub(PutBlob(key, source), ToUrl(key));
    return Scrub(PutBlocks(key, source), ToUrl(key));
  }

  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    const std::string name = ToUrl(prefix);
    auto transport = GetTransport();
    ListResult result;
    std::string marker;
    for (;;) {
      std::string url = config_.ContainerUrl() + "?restype=container&comp=list";
      if (!prefix.empty()) url += "&prefix=" + http::PercentEncode(prefix, false);
      if (!recursive) url += "&delimiter=%2F";
      if (!marker.empty()) url += "&marker=" + http::PercentEncode(marker, false);
      if (options_.list_page_size > 0) {
        url += fmt::format("&maxresults={}", options_.list_page_size);
      }
      auto page = Retry(options_.retry, [&]() -> Result<ListBlobsPage> {
        FERRY_ASSIGN_OR_RETURN(http::Response response, Send(*transport, NewRequest("GET", url)));
        if (response.status >= 300) return ErrorOf(response, name);
        return ParseListBlobs(response.body, name);
      });
      if (!page) return Scrub(page.status(), name);
      for (ObjectInfo& object : page->objects) result.objects.push_back(std::move(object));
      for (std::string& p : page->prefixes) result.prefixes.push_back(std::move(p));
      if (page->next_marker.empty()) break;
      if (page->next_marker == marker) {
        return DataLossError(fmt::format("{}: the listing repeats marker {}", name, marker));
      }
      marker = std::move(page->next_marker);
    }
    // The interface promises key order; do not depend on the server's collation.
    std::sort(result.objects.begin(), result.objects.end(),
              [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    std::sort(result.prefixes.begin(), result.prefixes.end());
    return result;
  }

  Status Remove(std::string_view key) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = config_.BlobUrl(key);
    const std::string name = ToUrl(key);
    auto transport = GetTransport();
    Status status = Retry(options_.retry, [&]() -> Status {
      http::Request request = NewRequest("DELETE", url);
      request.headers.Set("x-ms-delete-snapshots", "include");
      FERRY_ASSIGN_OR_RETURN(http::Response response, Send(*transport, std::move(request)));
      // Already gone (perhaps by our own earlier attempt) is what Remove wants; a missing
      // container is still an error.
      if (response.status == 404 && AzureErrorCodeOf(response) != "ContainerNotFound") {
        return Status::Ok();
      }
      if (response.status >= 300) return ErrorOf(response, name);
      return Status::Ok();
    });
    return Scrub(status, name);
  }

 private:
  std::shared_ptr<http::Transport> GetTransport() const {
    return transport_ ? transport_ : http::DefaultTransport();
  }

  Status CheckKey(std::string_view key) const {
    if (key.empty()) {
      return InvalidArgumentError(fmt::format("{}: an empty key names no blob", ToUrl(key)));
    }
    return Status::Ok();
  }

  // Adds x-ms-version and authorizes: the last step before a request is sent, done per attempt
  // so that every retry carries a fresh date and signature (or the provider's current token).
  Status Prepare(http::Request& request) const {
    request.headers.Set("x-ms-version", std::string(kAzureApiVersion));
    if (config_.token_provider) {
      FERRY_ASSIGN_OR_RETURN(const AzureToken token, config_.token_provider->Current());
      AuthorizeBearer(request, token.access_token, options_.now());
      return Status::Ok();
    }
    Authorize(request, config_.credentials, options_.now());
    return Status::Ok();
  }

  // The store's error for a refused request. A token the service calls expired is dropped, and
  // the error is transient, so that the retry fetches a new one.
  Status ErrorOf(const http::Response& response, std::string_view name) const {
    if (config_.token_provider && (response.status == 401 || response.status == 403) &&
        AsciiLower(response.body).find("token is expired") != std::string::npos) {
      config_.token_provider->Reject();
      return UnavailableError(fmt::format(
          "{}: the service says the Entra ID token from {} expired (a new one is fetched)", name,
          config_.token_provider->source()));
    }
    return AzureErrorToStatus(response, name);
  }

  static http::Request NewRequest(std::string method, std::string url) {
    http::Request request;
    request.method = std::move(method);
    request.url = std::move(url);
    return request;
  }

  // Prepares (exactly once: a SAS token must not be appended twice) and sends.
  Result<http::Response> Send(http::Transport& transport, http::Request request) const {
    FERRY_RETURN_IF_ERROR(Prepare(request));
    return transport.Execute(std::move(request));
  }

  // Whatever the service or transport said, no secret of ours leaves the store, and the error
  // names the blob as the user wrote it (`name`, az://container/key), not the endpoint URL the
  // request went to; a transport failure, which names only the latter, gets `name` in front.
  Status Scrub(const Status& status, std::string_view name) const {
    if (status.ok()) return status;
    Status named =
        status.message().find(name) == std::string::npos ? status.WithContext(name) : status;
    return Status(named.code(), config_.Redact(named.message()));
  }
  template <typename T>
  Result<T> Scrub(Result<T> result, std::string_view name) const {
    if (result) return result;
    return Scrub(result.status(), name);
  }

  // A HEAD reply has no body: the error code is in x-ms-error-code, but not the message that
  // tells, on Azurite, a wrong key from a missing permission. The same request as a GET fetches
  // the error document.
  Status HeadError(http::Transport& transport, const http::Response& head, const std::string& url,
                   std::string_view name) const {
    if ((head.status == 400 || head.status == 401 || head.status == 403) && head.body.empty()) {
      http::Request get = NewRequest("GET", url);
      get.headers.Set("Range", "bytes=0-0");
      if (Prepare(get).ok()) {
        if (auto reply = http::FetchErrorDocument(transport, std::move(get), head.status)) {
          return ErrorOf(*reply, name);
        }
      }
    }
    return ErrorOf(head, name);
  }

  Status PutBlob(std::string_view key, const ByteSource& source) {
    const std::string url = config_.BlobUrl(key);
    const std::string name = ToUrl(key);
    auto transport = GetTransport();
    return Retry(options_.retry, [&]() -> Status {
      http::Request request = NewRequest("PUT", url);
      request.headers.Set("x-ms-blob-type", "BlockBlob");
      request.body = source;
      FERRY_ASSIGN_OR_RETURN(http::Response response, Send(*transport, std::move(request)));
      if (response.status >= 300) return ErrorOf(response, name);
      return Status::Ok();
    });
  }

  // Completions of Put Block requests, handed from the transport's thread to the writer's.
  struct BlockCompletions {
    Mutex mu;
    std::condition_variable_any cv;
    std::deque<std::pair<size_t, Result<http::Response>>> done GUARDED_BY(mu);
    int in_flight GUARDED_BY(mu) = 0;
  };

  Status PutBlocks(std::string_view key, const ByteSource& source) {
    const std::string url = config_.BlobUrl(key);
    const std::string name = ToUrl(key);
    auto transport = GetTransport();
    const uint64_t block_size =
        std::max<uint64_t>({options_.block_size, (source.size + kMaxBlocks - 1) / kMaxBlocks, 1});
    const size_t count = static_cast<size_t>((source.size + block_size - 1) / block_size);
    const std::string upload_id = NewUploadId();
    std::vector<std::string> ids(count);
    for (size_t i = 0; i < count; ++i) ids[i] = BlockId(upload_id, i);

    auto state = std::make_shared<BlockCompletions>();
    const int max_in_flight = std::max(1, options_.max_blocks_in_flight);
    const RetryPolicy& policy = options_.retry;
    const auto start = std::chrono::steady_clock::now();
    std::vector<int> attempts(count, 0);
    // Blocks waiting out a backoff before their next attempt: (when, index).
    std::vector<std::pair<std::chrono::steady_clock::time_point, size_t>> backing_off;
    size_t next_new = 0;
    size_t stored = 0;
    Status failure;

    auto submit = [&](size_t index) {
      const uint64_t offset = index * block_size;
      http::Request request = NewRequest(
          "PUT",
          fmt::format("{}?comp=block&blockid={}", url, http::PercentEncode(ids[index], false)));
      request.body = Slice(source, offset, std::min(block_size, source.size - offset));
      if (Status prepared = Prepare(request); !prepared.ok()) {
        MutexLock lock(state->mu);
        state->done.emplace_back(index, std::move(prepared));
        --state->in_flight;
        state->cv.notify_all();
        return;
      }
      // Runs on the transport's thread (or inline, for a synchronous transport): only hands over.
      transport->Submit(std::move(request), {}, [state, index](Result<http::Response> result) {
        MutexLock lock(state->mu);
        state->done.emplace_back(index, std::move(result));
        --state->in_flight;
        state->cv.notify_all();
      });
    };

    for (;;) {
      // 1. Start whatever may start: due retries first, then new blocks, up to the bound.
      while (failure.ok()) {
        std::optional<size_t> index;
        {
          MutexLock lock(state->mu);
          if (state->in_flight >= max_in_flight) break;
          auto due = std::min_element(backing_off.begin(), backing_off.end());
          if (due != backing_off.end() && due->first <= std::chrono::steady_clock::now()) {
            index = due->second;
            backing_off.erase(due);
          } else if (next_new < count) {
            index = next_new++;
          } else {
            break;
          }
          ++state->in_flight;
        }
        ++attempts[*index];
        submit(*index);  // without the lock: a synchronous transport completes inside
      }

      // 2. Wait for completions (or for the next backoff to end).
      std::deque<std::pair<size_t, Result<http::Response>>> done;
      {
        MutexLock lock(state->mu);
        auto completed = [&]() REQUIRES(state->mu) { return !state->done.empty(); };
        if (state->done.empty()) {
          if (stored == count) break;
          if (state->in_flight == 0) {
            if (!failure.ok()) break;
            // Only blocks backing off remain: sleep until the first is due.
            const auto due = std::min_element(backing_off.begin(), backing_off.end())->first;
            state->cv.wait_until(lock, due, completed);
            continue;
          }
          if (failure.ok() && !backing_off.empty()) {
            const auto due = std::min_element(backing_off.begin(), backing_off.end())->first;
            state->cv.wait_until(lock, due, completed);
          } else {
            state->cv.wait(lock, completed);
          }
        }
        done.swap(state->done);
      }

      // 3. Account for them: stored, to retry after a backoff, or the upload's failure.
      for (auto& [index, result] : done) {
        Status status = result.status();
        if (status.ok() && result->status >= 300) status = ErrorOf(*result, name);
        if (status.ok()) {
          ++stored;
          continue;
        }
        const auto wait = BackoffForAttempt(policy, attempts[index], UnitRandom());
        const auto elapsed = std::chrono::steady_clock::now() - start;
        if (failure.ok() && IsRetryable(status.code()) && attempts[index] < policy.max_attempts &&
            elapsed + wait <= policy.total_budget) {
          backing_off.emplace_back(std::chrono::steady_clock::now() + wait, index);
        } else if (failure.ok()) {
          failure = status.WithContext(fmt::format("block {} of {} (gave up after {} attempts)",
                                                   index + 1, count, attempts[index]));
        }
      }
    }
    if (!failure.ok()) return failure;

    const std::string body = BlockListXml(ids);
    const std::string list_url = url + "?comp=blocklist";
    return Retry(policy, [&]() -> Status {
      http::Request request = NewRequest("PUT", list_url);
      request.headers.Set("Content-Type", "application/xml");
      request.body = ByteSource::FromView(body);
      FERRY_ASSIGN_OR_RETURN(http::Response response, Send(*transport, std::move(request)));
      if (response.status >= 300) return ErrorOf(response, name);
      return Status::Ok();
    });
  }

  const AzureConfig config_;
  const AzureStoreOptions options_;
  const std::shared_ptr<http::Transport> transport_;  // nullptr: the default transport
  const std::string scheme_;
};

}  // namespace

std::shared_ptr<ObjectStore> MakeAzureStore(AzureConfig config, AzureStoreOptions options,
                                            std::shared_ptr<http::Transport> transport) {
  return std::make_shared<AzureBlobStore>(std::move(config), std::move(options),
                                          std::move(transport));
}

Result<StoreAndKey> OpenAzureUrl(std::string_view url, const EnvLookup& env,
                                 AzureStoreOptions options,
                                 std::shared_ptr<http::Transport> transport) {
  FERRY_ASSIGN_OR_RETURN(AzureLocation location, ParseAzureUrl(url, env));
  return StoreAndKey{
      MakeAzureStore(std::move(location.config), std::move(options), std::move(transport)),
      std::move(location.key)};
}

Result<StoreAndKey> OpenCachedAzureUrl(std::string_view url, const EnvLookup& env) {
  FERRY_ASSIGN_OR_RETURN(AzureLocation location, ParseAzureUrl(url, env));
  const AzureConfig& c = location.config;
  // Every field of the config: two URLs that resolve alike share a store.
  const std::string cache_key =
      fmt::format("az\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}", c.url_prefix, c.account, c.container,
                  c.endpoint, c.credentials.account, c.credentials.account_key,
                  c.credentials.sas_token, c.token_provider ? c.token_provider->source() : "") +
      EnvFingerprint(EntraEnvironmentVariables(), env);
  FERRY_ASSIGN_OR_RETURN(
      std::shared_ptr<ObjectStore> store, CachedStore(cache_key, [&] {
        return Result<std::shared_ptr<ObjectStore>>(MakeAzureStore(location.config));
      }));
  return StoreAndKey{std::move(store), std::move(location.key)};
}

namespace {

Result<StoreAndKey> OpenAzureUrlFromEnvironment(std::string_view url) {
  return OpenCachedAzureUrl(url);
}

const StoreRegistration kAzRegistration("az", &OpenAzureUrlFromEnvironment);
const StoreRegistration kAbfsRegistration("abfs", &OpenAzureUrlFromEnvironment);
const StoreRegistration kAbfssRegistration("abfss", &OpenAzureUrlFromEnvironment);

}  // namespace
}  // namespace ferry::internal_azure
