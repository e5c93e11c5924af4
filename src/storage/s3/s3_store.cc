// S3Store: an ObjectStore over one bucket of S3 or an S3-compatible service, speaking the REST
// API through http::Transport and signing with SigV4 (s3_signer.h).
//
//   Head    HEAD /key                      size, etag, Last-Modified; when refused (400, 403),
//                                          GET /key with Range: bytes=0-0 for the error's code
//   Read    GET /key with Range            through http::ResumableGet (resumes a broken body
//                                          from where it stopped, pinned with If-Match)
//   Write   PUT /key                       below multipart_threshold
//           POST /key?uploads              CreateMultipartUpload
//           PUT /key?partNumber&uploadId   the parts, several in flight (s3_multipart.h)
//           POST /key?uploadId             CompleteMultipartUpload (XML list of part ETags)
//           DELETE /key?uploadId           AbortMultipartUpload, when anything above fails
//   List    GET /?list-type=2&prefix&delimiter&continuation-token&encoding-type=url
//   Remove  DELETE /key                    404 counts as done
//
// Every request is built afresh for each attempt (so each is signed with the current time) and
// retried under the store's RetryPolicy when its failure is transient; all of these operations
// are idempotent, CreateMultipartUpload aside, whose retry at worst leaves an empty upload.
// Errors name the object as scheme://bucket/key, which never carries a secret.
//
// Thread-safety: the store is immutable after construction; every method may run concurrently.
#include "storage/s3/s3_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "base/ascii.h"
#include "storage/http/resumable_get.h"
#include "storage/http/store_checksum.h"
#include "storage/http/url_encoding.h"
#include "storage/s3/s3_errors.h"
#include "storage/s3/s3_metadata.h"
#include "storage/s3/s3_multipart.h"
#include "storage/s3/s3_signer.h"
#include "storage/store_cache.h"

namespace ferry::internal_s3 {
namespace {

// S3 refuses longer keys; failing here gives a clearer message than the service would.
constexpr size_t kMaxKeyBytes = 1024;
// How much of a body is read at a time to hash it.
constexpr size_t kHashChunk = size_t{1} << 20;

// The bytes [offset, offset + size) of `source`, as a source of their own.
ByteSource Slice(const ByteSource& source, uint64_t offset, uint64_t size) {
  ByteSource slice;
  slice.size = size;
  slice.read = [read = source.read, offset, size](uint64_t at, char* buffer,
                                                  size_t n) -> Result<size_t> {
    if (at >= size) return size_t{0};
    return read(offset + at, buffer, std::min<uint64_t>(n, size - at));
  };
  return slice;
}

Result<std::string> HashSource(const ByteSource& source, std::string_view name) {
  Sha256 hash;
  std::string buffer(std::min<uint64_t>(kHashChunk, std::max<uint64_t>(source.size, 1)), '\0');
  uint64_t offset = 0;
  while (offset < source.size) {
    const size_t want = std::min<uint64_t>(buffer.size(), source.size - offset);
    FERRY_ASSIGN_OR_RETURN(size_t n, source.read(offset, buffer.data(), want));
    if (n == 0) {
      return DataLossError(
          fmt::format("{}: the source ended after {} of {} bytes", name, offset, source.size));
    }
    hash.Update(std::string_view(buffer.data(), n));
    offset += n;
  }
  return hash.HexDigest();
}

// Every error names the object. HTTP errors already do (S3ErrorToStatus); transport failures
// name only the endpoint URL, so they get the object's URL in front.
Status Named(const Status& s, std::string_view name) {
  if (s.ok() || s.message().find(name) != std::string::npos) return s;
  return s.WithContext(name);
}

class S3Store final : public ObjectStore {
 public:
  S3Store(S3StoreConfig config, std::shared_ptr<http::Transport> transport)
      : config_(std::move(config)),
        credentials_(config_.credential_provider ? config_.credential_provider
                                                 : FixedAwsCredentials(config_.credentials)),
        transport_(std::move(transport)) {}

  std::string_view scheme() const override { return config_.scheme; }

  std::string ToUrl(std::string_view key) const override {
    return fmt::format("{}://{}/{}", config_.scheme, config_.bucket, key);
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = ObjectUrl(config_.endpoint, config_.bucket, key);
    const std::string name = ToUrl(key);
    auto info = Retry(config_.retry, [&]() -> Result<ObjectInfo> {
      FERRY_ASSIGN_OR_RETURN(http::Response r,
                             Send("HEAD", url, {}, std::nullopt, kEmptyPayloadSha256));
      if (r.status >= 300) return HeadError(r, url, name);
      return http::ObjectInfoFromHeaders(r.headers, key, name);
    });
    if (!info) return Named(info.status(), name);
    return info;
  }

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = ObjectUrl(config_.endpoint, config_.bucket, key);
    http::ResumableGetOptions options;
    options.url = ToUrl(key);
    options.retry = config_.retry;
    options.build = [&](const http::GetAttempt&, http::Headers headers) {
      // The object's checksum comes with a reply of the whole object (GCS sends x-goog-hash
      // unasked, and its XML API knows no such header).
      if (config_.scheme != "gs") headers.Set(http::kS3ChecksumModeHeader, "ENABLED");
      return MakeRequest("GET", url, std::move(headers), std::nullopt, kEmptyPayloadSha256);
    };
    options.map_error = [&](const http::Response& r) { return RetryableError(r, options.url); };
    options.describe = [](int, const http::Headers& headers, ObjectInfo& info) {
      info.checksum = http::ChecksumFromS3Headers(headers);
    };
    auto transport = GetTransport();
    auto info = http::ResumableGet(*transport, options, range, sink);
    if (!info) return Named(info.status(), options.url);
    info->key = std::string(key);
    return info;
  }

  Status Write(std::string_view key, const ByteSource& source) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    if (source.size >= config_.multipart_threshold) return WriteMultipart(key, source);
    return WriteSingle(key, source);
  }

  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    const std::string name = ToUrl(prefix);
    ListResult out;
    std::optional<std::string> token;
    for (;;) {
      // Parameters in canonical order, so that the URL sent is the URL signed, byte for byte.
      std::string query = "list-type=2";
      if (token) query += "&continuation-token=" + http::PercentEncode(*token, false);
      if (!recursive) query += "&delimiter=%2F";
      if (config_.list_url_encoding) query += "&encoding-type=url";
      query += fmt::format("&max-keys={}&prefix={}", config_.list_page_size,
                           http::PercentEncode(prefix, false));
      const std::string url = BucketRequestUrl(query);
      auto page = Retry(config_.retry, [&]() -> Result<ListPage> {
        FERRY_ASSIGN_OR_RETURN(http::Response r,
                               SendOk("GET", url, {}, std::nullopt, kEmptyPayloadSha256, name));
        return ParseListObjectsV2(r.body, name);
      });
      if (!page) return Named(page.status(), name);
      std::move(page->objects.begin(), page->objects.end(), std::back_inserter(out.objects));
      std::move(page->prefixes.begin(), page->prefixes.end(), std::back_inserter(out.prefixes));
      if (!page->next_token) break;
      if (token && *page->next_token == *token) {
        return DataLossError(
            fmt::format("{}: the listing returned the same continuation token twice", name));
      }
      token = std::move(page->next_token);
    }
    // S3 lists in UTF-8 byte order already; servers that merely claim to are put right here.
    std::sort(out.objects.begin(), out.objects.end(),
              [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    std::sort(out.prefixes.begin(), out.prefixes.end());
    out.prefixes.erase(std::unique(out.prefixes.begin(), out.prefixes.end()), out.prefixes.end());
    return out;
  }

  Status Remove(std::string_view key) override {
    FERRY_RETURN_IF_ERROR(CheckKey(key));
    const std::string url = ObjectUrl(config_.endpoint, config_.bucket, key);
    const std::string name = ToUrl(key);
    auto attempt = [&]() -> Status {
      FERRY_ASSIGN_OR_RETURN(http::Response r,
                             Send("DELETE", url, {}, std::nullopt, kEmptyPayloadSha256));
      if (r.status >= 300 && r.status != 404) return MapError(r, name);
      return Status::Ok();
    };
    return Named(Retry(config_.retry, attempt), name);
  }

 private:
  std::shared_ptr<http::Transport> GetTransport() const {
    return transport_ ? transport_ : http::DefaultTransport();
  }

  std::chrono::system_clock::time_point Now() const {
    return config_.clock ? config_.clock() : std::chrono::system_clock::now();
  }

  Status CheckKey(std::string_view key) const {
    if (key.empty()) {
      return InvalidArgumentError(fmt::format("{}: an object key must not be empty", ToUrl(key)));
    }
    if (key.size() > kMaxKeyBytes) {
      return InvalidArgumentError(fmt::format("{}…: the key is longer than {} bytes",
                                              ToUrl(key.substr(0, 64)), kMaxKeyBytes));
    }
    return Status::Ok();
  }

  // Requests about the bucket itself: virtual-hosted at "/", path style at "/bucket".
  std::string BucketRequestUrl(std::string_view query) const {
    const std::string base = BucketUrl(config_.endpoint, config_.bucket);
    const bool virtual_hosted = config_.endpoint.style == AddressingStyle::kVirtualHosted;
    return fmt::format("{}{}?{}", base, virtual_hosted ? "/" : "", query);
  }

  bool SignsBodies() const {
    if (Anonymous()) return false;
    switch (config_.payload_signing) {
      case PayloadSigning::kAlways:
        return true;
      case PayloadSigning::kNever:
        return false;
      case PayloadSigning::kAuto:
        break;
    }
    return config_.endpoint.scheme != "https";
  }

  // What a request was authorized with, for dropping exactly that when it is refused.
  struct UsedCredentials {
    std::optional<internal_storage::AccessToken> token;
    std::optional<AwsCredentials> keys;
  };

  Result<http::Request> MakeRequest(std::string_view method, std::string url, http::Headers headers,
                                    std::optional<ByteSource> body, std::string_view payload_hash,
                                    UsedCredentials* used = nullptr) const {
    http::Request request;
    request.method = std::string(method);
    request.url = std::move(url);
    request.headers = std::move(headers);
    request.body = std::move(body);
    request.timeouts = http::StallLimitScope::Apply(config_.timeouts);
    if (config_.requester_pays) request.headers.Set("x-amz-request-payer", "requester");
    if (config_.bearer_token_provider) {
      FERRY_ASSIGN_OR_RETURN(const internal_storage::AccessToken token,
                             config_.bearer_token_provider->Current());
      request.headers.Set("Authorization", "Bearer " + token.access_token);
      if (used != nullptr) used->token = token;
      return request;
    }
    FERRY_ASSIGN_OR_RETURN(AwsCredentials credentials, credentials_->Current());
    if (used != nullptr) used->keys = credentials;
    const SigV4Signer signer(std::move(credentials), config_.region, config_.service);
    FERRY_RETURN_IF_ERROR(signer.Sign(request, payload_hash, Now()));
    return request;
  }

  // True when the requests go unsigned (a chain that found nothing, or anonymous by request).
  bool Anonymous() const {
    if (config_.bearer_token_provider) return false;
    auto current = credentials_->Current();
    return current.ok() && current->anonymous();
  }

  // The store's error for a reply; a refusal of an unsigned request says why it was unsigned.
  Status MapError(const http::Response& response, std::string_view name) const {
    Status s = S3ErrorToStatus(response, name);
    if (s.code() == StatusCode::kPermissionDenied && !config_.requester_pays &&
        s.message().find("AccessDenied") != std::string::npos) {
      s = Status(s.code(), fmt::format("{} (if {} is a Requester Pays bucket, name it in "
                                       "FERRY_S3_REQUESTER_PAYS)",
                                       s.message(), config_.bucket));
    }
    auto current = credentials_->Current();
    if (!config_.bearer_token_provider && current.ok() && current->anonymous() &&
        (s.code() == StatusCode::kPermissionDenied || s.code() == StatusCode::kUnauthenticated)) {
      return Status(s.code(), fmt::format("{} (the request was not signed: {})", s.message(),
                                          current->ToString()));
    }
    return s;
  }

  // MapError for requests the caller retries itself (reads, parts): a bearer token refused with
  // 401 is dropped and the error is transient, so that the retry goes with a new one.
  Status RetryableError(const http::Response& response, std::string_view name) const {
    if (config_.bearer_token_provider && response.status == 401) {
      config_.bearer_token_provider->Reject();
      return UnavailableError(
          fmt::format("{}: the service refused the token from {} (HTTP 401; "
                      "a new one is fetched)",
                      name, config_.bearer_token_provider->source()));
    }
    return MapError(response, name);
  }

  // A refused HEAD says only "HTTP 403" where a GET would name the reason
  // (SignatureDoesNotMatch, InvalidAccessKeyId, AccessDenied, ...): the same request as a GET
  // fetches the error document.
  Status HeadError(const http::Response& head, const std::string& url,
                   std::string_view name) const {
    if ((head.status == 400 || head.status == 403) && head.body.empty()) {
      http::Headers headers;
      headers.Set("Range", "bytes=0-0");
      auto get = MakeRequest("GET", url, std::move(headers), std::nullopt, kEmptyPayloadSha256);
      if (get) {
        auto reply = http::FetchErrorDocument(*GetTransport(), *std::move(get), head.status);
        if (reply && ParseS3ErrorBody(reply->body)) return MapError(*reply, name);
      }
    }
    return MapError(head, name);
  }

  // One attempt. Transport failures are errors; HTTP errors are responses.
  Result<http::Response> Send(std::string_view method, std::string url, http::Headers headers,
                              std::optional<ByteSource> body, std::string_view payload_hash) const {
    UsedCredentials used;
    FERRY_ASSIGN_OR_RETURN(http::Request request,
                           MakeRequest(method, url, headers, body, payload_hash, &used));
    auto transport = GetTransport();
    FERRY_ASSIGN_OR_RETURN(http::Response r, transport->Execute(std::move(request)));
    if (config_.bearer_token_provider && r.status == 401) {
      // A bearer token the service no longer takes (expired early, revoked): once more with a
      // new one.
      if (used.token) config_.bearer_token_provider->Expire(*used.token);
    } else if (IsExpiredToken(r)) {
      // Temporary credentials that S3 says expired (a clock ahead of ours, a revoked session):
      // the provider drops them, and the request goes once more with new ones.
      if (used.keys) credentials_->Expire(*used.keys);
    } else {
      return r;
    }
    FERRY_ASSIGN_OR_RETURN(request, MakeRequest(method, std::move(url), std::move(headers),
                                                std::move(body), payload_hash));
    return transport->Execute(std::move(request));
  }

  static bool IsExpiredToken(const http::Response& r) {
    return (r.status == 400 || r.status == 403) &&
           (r.body.find("<Code>ExpiredToken</Code>") != std::string::npos ||
            r.body.find("<Code>TokenRefreshRequired</Code>") != std::string::npos);
  }

  // Send, with every status >= 300 mapped to an error.
  Result<http::Response> SendOk(std::string_view method, std::string url, http::Headers headers,
                                std::optional<ByteSource> body, std::string_view payload_hash,
                                std::string_view name) const {
    FERRY_ASSIGN_OR_RETURN(http::Response r, Send(method, std::move(url), std::move(headers),
                                                  std::move(body), payload_hash));
    if (r.status >= 300) return MapError(r, name);
    return r;
  }

  Status WriteSingle(std::string_view key, const ByteSource& source) {
    const std::string url = ObjectUrl(config_.endpoint, config_.bucket, key);
    const std::string name = ToUrl(key);
    std::string hash(kUnsignedPayload);
    if (SignsBodies()) {
      FERRY_ASSIGN_OR_RETURN(hash, HashSource(source, name));
    }
    auto attempt = [&]() -> Status { return SendOk("PUT", url, {}, source, hash, name).status(); };
    return Named(Retry(config_.retry, attempt), name);
  }

  Status WriteMultipart(std::string_view key, const ByteSource& source) {
    const std::string url = ObjectUrl(config_.endpoint, config_.bucket, key);
    const std::string name = ToUrl(key);

    // 1. CreateMultipartUpload. The empty body makes the transport send Content-Length: 0.
    auto created = Retry(config_.retry, [&]() -> Result<std::string> {
      FERRY_ASSIGN_OR_RETURN(http::Response r,
                             SendOk("POST", url + "?uploads", {}, ByteSource::FromView(""),
                                    kEmptyPayloadSha256, name));
      return ParseInitiateMultipartUpload(r.body, name);
    });
    if (!created) return Named(created.status(), name);
    const std::string upload_id = *std::move(created);
    const std::string upload_query = "uploadId=" + http::PercentEncode(upload_id, false);

    // 2. The parts.
    PartUploadOptions parts;
    parts.object_size = source.size;
    parts.plan = PlanParts(source.size, config_.part_size);
    parts.max_in_flight = config_.max_parts_in_flight;
    parts.retry = config_.retry;
    parts.url = name;
    const bool sign_bodies = SignsBodies();
    std::map<int, std::string> hashes;  // hashed once, reused by retries
    parts.build = [&](int number, uint64_t offset, uint64_t size) -> Result<http::Request> {
      ByteSource slice = Slice(source, offset, size);
      std::string hash(kUnsignedPayload);
      if (sign_bodies) {
        auto it = hashes.find(number);
        if (it == hashes.end()) {
          FERRY_ASSIGN_OR_RETURN(std::string h, HashSource(slice, name));
          it = hashes.emplace(number, std::move(h)).first;
        }
        hash = it->second;
      }
      return MakeRequest("PUT", fmt::format("{}?partNumber={}&{}", url, number, upload_query), {},
                         std::move(slice), hash);
    };
    parts.map_error = [&](const http::Response& r) { return RetryableError(r, name); };
    auto transport = GetTransport();
    auto completed = UploadParts(*transport, parts);
    if (!completed) return Abort(url, upload_query, name, completed.status());

    // 3. CompleteMultipartUpload.
    const std::string xml = CompleteMultipartUploadXml(*completed);
    const std::string xml_hash = Sha256Hex(xml);
    bool ambiguous = false;  // an attempt may have completed the upload without our hearing
    Status status = Retry(config_.retry, [&]() -> Status {
      http::Headers headers;
      headers.Set("Content-Type", "application/xml");
      auto r = Send("POST", url + "?" + upload_query, std::move(headers), ByteSource::FromView(xml),
                    xml_hash);
      if (!r) {
        ambiguous = true;
        return r.status();
      }
      if (r->status >= 300) return MapError(*r, name);
      return CheckCompleteMultipartUpload(r->body, name);
    });
    if (status.code() == StatusCode::kNotFound && ambiguous) {
      // NoSuchUpload after a lost reply: the earlier attempt most likely completed it. The
      // object is ours if it has our size and a multipart ETag of our part count.
      auto info = Head(key);
      if (info && info->size == source.size &&
          info->etag.ends_with(fmt::format("-{}", completed->size()))) {
        return Status::Ok();
      }
    }
    if (!status.ok()) return Abort(url, upload_query, name, Named(status, name));
    return Status::Ok();
  }

  // AbortMultipartUpload after `cause`, which is returned (with a note if the abort failed too:
  // the parts then stay stored, and billed, until a lifecycle rule removes them).
  Status Abort(const std::string& url, const std::string& upload_query, std::string_view name,
               const Status& cause) {
    RetryPolicy policy = config_.retry;
    policy.max_attempts = std::min(policy.max_attempts, 3);
    Status s = Retry(policy, [&]() -> Status {
      FERRY_ASSIGN_OR_RETURN(http::Response r, Send("DELETE", url + "?" + upload_query, {},
                                                    std::nullopt, kEmptyPayloadSha256));
      if (r.status >= 300 && r.status != 404) return MapError(r, name);
      return Status::Ok();
    });
    if (s.ok()) return cause;
    return Status(cause.code(), fmt::format("{} (and aborting the multipart upload failed: {})",
                                            cause.message(), s.message()));
  }

  const S3StoreConfig config_;
  const std::shared_ptr<AwsCredentialProvider> credentials_;
  const std::shared_ptr<http::Transport> transport_;  // null: http::DefaultTransport()
};

// Every environment variable S3StoreConfigFromEnvironment reads: a store is reused only while
// all of them are unchanged. Add a variable here when the configuration starts reading it.
constexpr const char* kS3EnvironmentVariables[] = {
    "HOME",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_NO_SIGN_REQUEST",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
    "FERRY_AWS_ROLE_DURATION_SECONDS",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "S3_ENDPOINT_URL",
    "FERRY_S3_ADDRESSING",
    "FERRY_S3_REQUESTER_PAYS",
    "MOSAICML_STREAMING_AWS_REQUESTER_PAYS",
};

// Whether `bucket` is in the comma-separated list of `variable` ("*" matches any bucket).
bool ListedBucket(std::string_view bucket, const EnvLookup& env, std::string_view variable) {
  const std::string list = env(variable).value_or("");
  std::string_view rest = list;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view name = TrimAsciiWhitespace(rest.substr(0, comma));
    if (name == bucket || name == "*") return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

Result<std::shared_ptr<ObjectStore>> MakeS3Store(S3StoreConfig config,
                                                 std::shared_ptr<http::Transport> transport) {
  if (config.bucket.empty()) return InvalidArgumentError("S3 store: no bucket");
  if (config.endpoint.authority.empty()) {
    return InvalidArgumentError(fmt::format("{}://{}: no endpoint", config.scheme, config.bucket));
  }
  if (config.part_size == 0 || config.part_size > kMaxPartSize) {
    return InvalidArgumentError(fmt::format("{}://{}: part size {} is not in [1, {}]",
                                            config.scheme, config.bucket, config.part_size,
                                            kMaxPartSize));
  }
  if (config.multipart_threshold == 0 || config.max_parts_in_flight < 1 ||
      config.list_page_size < 1) {
    return InvalidArgumentError(fmt::format(
        "{}://{}: multipart_threshold, max_parts_in_flight and list_page_size must be positive",
        config.scheme, config.bucket));
  }
  return std::shared_ptr<ObjectStore>(
      std::make_shared<S3Store>(std::move(config), std::move(transport)));
}

Result<S3StoreConfig> S3StoreConfigFromEnvironment(std::string_view bucket,
                                                   const AwsConfigOptions& options,
                                                   const EnvLookup& env) {
  S3StoreConfig config;
  config.bucket = std::string(bucket);
  FERRY_ASSIGN_OR_RETURN(config.credential_provider, LoadAwsCredentialProvider(options, env));
  FERRY_ASSIGN_OR_RETURN(config.region, LoadAwsRegion(options, env));
  FERRY_ASSIGN_OR_RETURN(config.endpoint, ResolveS3Endpoint(bucket, config.region, env));
  FERRY_RETURN_IF_ERROR(ValidateBucketName(
      bucket, config.endpoint.custom ? BucketNaming::kPermissive : BucketNaming::kAws));
  config.requester_pays = ListedBucket(bucket, env, "FERRY_S3_REQUESTER_PAYS") ||
                          ListedBucket(bucket, env, "MOSAICML_STREAMING_AWS_REQUESTER_PAYS");
  return config;
}

Result<std::shared_ptr<ObjectStore>> CachedS3Store(
    std::string_view cache_key, const std::function<Result<S3StoreConfig>()>& make) {
  return CachedStore(cache_key, [&]() -> Result<std::shared_ptr<ObjectStore>> {
    FERRY_ASSIGN_OR_RETURN(S3StoreConfig config, make());
    return MakeS3Store(std::move(config));
  });
}

Result<StoreAndKey> OpenS3Url(std::string_view url, const EnvLookup& env) {
  FERRY_ASSIGN_OR_RETURN(BucketAndKey location, ParseBucketUrl(url, "s3"));
  FERRY_ASSIGN_OR_RETURN(
      std::shared_ptr<ObjectStore> store,
      CachedS3Store("s3\n" + location.bucket + EnvFingerprint(kS3EnvironmentVariables, env),
                    [&] { return S3StoreConfigFromEnvironment(location.bucket, {}, env); }));
  return StoreAndKey{std::move(store), std::move(location.key)};
}

}  // namespace ferry::internal_s3

namespace ferry {
namespace {
Result<StoreAndKey> OpenS3UrlFromEnvironment(std::string_view url) {
  return internal_s3::OpenS3Url(url);
}
const StoreRegistration kS3Registration("s3", &OpenS3UrlFromEnvironment);
}  // namespace
}  // namespace ferry
