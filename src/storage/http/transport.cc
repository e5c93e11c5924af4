#include "storage/http/transport.h"

#include <unistd.h>

#include <future>

#include "base/mutex.h"
#include "storage/curl/curl_transport.h"

namespace ferry::http {
namespace {

struct DefaultState {
  Mutex mu;
  std::shared_ptr<Transport> transport GUARDED_BY(mu);
  pid_t pid GUARDED_BY(mu) = 0;
  std::shared_ptr<Transport> override_for_testing GUARDED_BY(mu);
};

DefaultState& State() {
  static auto* state = new DefaultState();  // never destroyed: used until process exit
  return *state;
}

}  // namespace

Result<Response> Transport::Execute(Request request, BodySink sink) {
  std::promise<Result<Response>> promise;
  auto future = promise.get_future();
  Submit(std::move(request), std::move(sink),
         [&promise](Result<Response> result) { promise.set_value(std::move(result)); });
  return future.get();
}

std::optional<Response> FetchErrorDocument(Transport& transport, Request get, int status) {
  // Error bodies never reach a sink: this one sees only a success's body, which is not wanted.
  auto refuse_body = [](std::string_view chunk) {
    return chunk.empty() ? Status::Ok() : CancelledError("not an error reply");
  };
  auto reply = transport.Execute(std::move(get), refuse_body);
  if (!reply || reply->status != status || reply->body.empty()) return std::nullopt;
  return *std::move(reply);
}

std::shared_ptr<Transport> DefaultTransport() {
  DefaultState& s = State();
  MutexLock lock(s.mu);
  if (s.override_for_testing) return s.override_for_testing;
  if (!s.transport || s.pid != ::getpid()) {
    if (s.transport && s.pid != ::getpid()) {
      // A forked child: the parent's I/O thread does not exist here, so its transport cannot be
      // shut down (joining would hang). Leak it and start afresh.
      new std::shared_ptr<Transport>(std::move(s.transport));
    }
    s.transport = MakeCurlTransport();
    s.pid = ::getpid();
  }
  return s.transport;
}

void SetDefaultTransportForTesting(std::shared_ptr<Transport> transport) {
  DefaultState& s = State();
  MutexLock lock(s.mu);
  s.override_for_testing = std::move(transport);
}

std::shared_ptr<Transport> DefaultIfNull(Transport*& transport) {
  if (transport != nullptr) return nullptr;
  auto owned = DefaultTransport();
  transport = owned.get();
  return owned;
}

}  // namespace ferry::http
