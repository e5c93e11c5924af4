#include "storage/http/recording_transport.h"

#include "storage/http/url_encoding.h"

namespace ferry::http {

void RecordingTransport::Submit(Request request, BodySink sink, Completion done) {
  RecordedRequest r{request.method, request.url, request.headers, {}};
  if (request.body) {
    r.body.resize(request.body->size);
    uint64_t offset = 0;
    while (offset < request.body->size) {
      auto n = request.body->read(offset, r.body.data() + offset, r.body.size() - offset);
      if (!n) return done(n.status());
      if (*n == 0) break;
      offset += *n;
    }
    r.body.resize(offset);
  }
  {
    MutexLock lock(mu_);
    requests_.push_back(r);
  }
  Result<Response> response = handler_ ? handler_(r) : Result<Response>(Response{200, {}, {}});
  if (response && request.on_headers) request.on_headers(response->status, response->headers);
  if (response && sink && response->status < 300) {
    // A simulated connection loss: part of the body, then a transport error.
    std::string_view body = response->body;
    std::optional<size_t> break_after;
    if (auto b = response->headers.Get(kBreakAfterHeader))
      break_after = std::stoul(std::string(*b));
    if (break_after) body = body.substr(0, std::min(*break_after, body.size()));
    if (Status s = sink(body); !s.ok()) return done(s);
    if (break_after) return done(UnavailableError(r.url + ": connection reset (simulated)"));
    response->body.clear();
  }
  done(std::move(response));
}

std::vector<RecordedRequest> RecordingTransport::requests() const {
  MutexLock lock(mu_);
  return requests_;
}

void RecordingTransport::Clear() {
  MutexLock lock(mu_);
  requests_.clear();
}

std::string QueryParam(std::string_view url, std::string_view name) {
  const size_t q = url.find('?');
  if (q == std::string_view::npos) return "";
  std::string_view query = url.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return "";
}

}  // namespace ferry::http
