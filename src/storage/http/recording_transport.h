// RecordingTransport: a fake http::Transport for unit tests of request building. It records
// every request (with its body read out) and answers from a handler the test supplies. It never
// replaces the tests against real servers.
//
// Thread-safety: Submit may be called from any thread; the handler runs on the caller's thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "storage/http/transport.h"

namespace ferry::http {

struct RecordedRequest {
  std::string method;
  std::string url;
  Headers headers;
  std::string body;
};

class RecordingTransport : public Transport {
 public:
  /// A handler's response carrying this header (a byte count) simulates a connection that
  /// breaks: the sink gets that many body bytes, then the request fails with kUnavailable.
  static constexpr std::string_view kBreakAfterHeader = "X-Recording-Break-After";

  using Handler = std::function<Result<Response>(const RecordedRequest&)>;

  /// Without a handler every request gets 200 with an empty body.
  explicit RecordingTransport(Handler handler = {}) : handler_(std::move(handler)) {}

  void Submit(Request request, BodySink sink, Completion done) override EXCLUDES(mu_);

  std::vector<RecordedRequest> requests() const EXCLUDES(mu_);
  void Clear() EXCLUDES(mu_);

 private:
  Handler handler_;
  mutable Mutex mu_;
  std::vector<RecordedRequest> requests_ GUARDED_BY(mu_);
};

/// The query parameter `name` of `url`, percent-decoded; "" when absent. For checking the
/// requests a store made.
std::string QueryParam(std::string_view url, std::string_view name);

}  // namespace ferry::http
