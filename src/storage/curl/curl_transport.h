// CurlTransport: http::Transport on libcurl's multi interface. This file and its .cc are the only
// code in ferry that knows libcurl.
//
// One I/O thread (a std::jthread) drives every transfer: Submit queues the request and wakes the
// thread, which adds it to the multi handle; completions run on that thread. The thread waits in
// epoll on the sockets libcurl names (its socket interface), so a wakeup costs the sockets that
// are ready, not a poll of every transfer's. Connections are
// kept alive and reused across requests to the same host (the multi handle's connection cache),
// so hundreds of requests can be in flight without a thread each.
//
// TLS peers are verified. The CA bundle is the options' ca_bundle, else libcurl's default unless
// FERRY_CA_BUNDLE, CURL_CA_BUNDLE or SSL_CERT_FILE names a file.
//
// Thread-safety: Submit from any thread. The destructor stops the I/O thread; transfers still in
// flight complete with kCancelled.
#pragma once

#include <memory>
#include <string>

#include "storage/http/transport.h"

namespace ferry::http {

struct CurlTransportOptions {
  /// Idle connections kept for reuse (across all hosts).
  long max_cached_connections = 1024;
  /// Concurrent connections to one host; 0 = unlimited (requests queue inside libcurl beyond).
  long max_connections_per_host = 0;
  /// A CA bundle (PEM file) to verify TLS peers with, instead of the environment's choice: a
  /// program that trusts one server's own certificate (tests against an HTTPS emulator).
  std::string ca_bundle;
};

std::shared_ptr<Transport> MakeCurlTransport(CurlTransportOptions options = {});

}  // namespace ferry::http
