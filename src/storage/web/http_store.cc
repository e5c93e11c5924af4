// HttpStore: any HTTP(S) server as a read-only ObjectStore (schemes "http" and "https").
//
// One store per origin ("https://host:port"); the key is the path after the origin's '/',
// query string included. Reads go through ResumableGet, so they resume after a break and can
// read byte ranges from servers that honour Range. Writing, removing and listing are
// kUnimplemented: plain HTTP has no such operations.
//
// Thread-safety: immutable after construction.
#include <fmt/format.h>

#include <memory>

#include "base/ascii.h"
#include "ferry/storage/object_store.h"
#include "ferry/storage/registry.h"
#include "storage/http/http_date.h"
#include "storage/http/resumable_get.h"
#include "storage/http/transport.h"
#include "storage/store_cache.h"

namespace ferry {
namespace {

class HttpStore : public ObjectStore {
 public:
  HttpStore(std::string origin, std::shared_ptr<http::Transport> transport)
      : origin_(std::move(origin)),
        scheme_(origin_.substr(0, origin_.find(':'))),
        transport_(std::move(transport)) {}

  std::string_view scheme() const override { return scheme_; }
  bool read_only() const override { return true; }
  std::string ToUrl(std::string_view key) const override {
    return origin_ + "/" + std::string(key);
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    const std::string url = ToUrl(key);
    return Retry(retry_, [&]() -> Result<ObjectInfo> {
      http::Request request;
      request.method = "HEAD";
      request.url = url;
      FERRY_ASSIGN_OR_RETURN(http::Response response, transport().Execute(std::move(request)));
      if (response.status >= 300) {
        return http::StatusFromHttp(response.status, http::RedactUrl(url), "");
      }
      ObjectInfo info;
      info.key = std::string(key);
      if (auto cl = response.headers.Get("Content-Length")) {
        info.size = ParseUint(*cl).value_or(0);
      }
      if (auto etag = response.headers.Get("ETag")) info.etag = http::UnquoteEtag(*etag);
      if (auto lm = response.headers.Get("Last-Modified")) info.mtime = http::ParseHttpDate(*lm);
      return info;
    });
  }

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    const std::string url = ToUrl(key);
    http::ResumableGetOptions options;
    options.url = http::RedactUrl(url);
    options.retry = retry_;
    options.build = [&](const http::GetAttempt&, http::Headers headers) -> Result<http::Request> {
      http::Request request;
      request.url = url;
      request.headers = std::move(headers);
      return request;
    };
    options.map_error = [&](const http::Response& response) {
      return http::StatusFromHttp(response.status, options.url, "");
    };
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, http::ResumableGet(transport(), options, range, sink));
    info.key = std::string(key);
    return info;
  }

  Status Write(std::string_view key, const ByteSource&) override { return ReadOnly(key); }
  Status Remove(std::string_view key) override { return ReadOnly(key); }
  Result<ListResult> List(std::string_view prefix, bool) override {
    return UnimplementedError(
        fmt::format("{}: HTTP servers cannot be listed", http::RedactUrl(ToUrl(prefix))));
  }

 private:
  // The process transport is looked up per call rather than kept: after a fork the child gets
  // its own (the parent's I/O thread does not exist there).
  http::Transport& transport() const {
    return transport_ ? *transport_ : *http::DefaultTransport();
  }

  Status ReadOnly(std::string_view key) const {
    return UnimplementedError(
        fmt::format("{}: HTTP(S) URLs are read-only", http::RedactUrl(ToUrl(key))));
  }

  const std::string origin_;
  const std::string scheme_;
  const std::shared_ptr<http::Transport> transport_;  // null: the process default
  const RetryPolicy retry_;
};

Result<StoreAndKey> OpenHttpUrl(std::string_view url) {
  const size_t sep = url.find("://");
  const size_t path_start = url.find('/', sep + 3);
  const std::string origin(url.substr(0, path_start));
  if (origin.size() <= sep + 3) {
    return InvalidArgumentError(fmt::format("{}: no host in the URL", http::RedactUrl(url)));
  }
  std::string key =
      path_start == std::string_view::npos ? "" : std::string(url.substr(path_start + 1));
  FERRY_ASSIGN_OR_RETURN(
      std::shared_ptr<ObjectStore> store, CachedStore(origin, [&] {
        return Result<std::shared_ptr<ObjectStore>>(std::make_shared<HttpStore>(origin, nullptr));
      }));
  return StoreAndKey{std::move(store), std::move(key)};
}

}  // namespace

const StoreRegistration kHttpRegistration("http", &OpenHttpUrl);
const StoreRegistration kHttpsRegistration("https", &OpenHttpUrl);

}  // namespace ferry
