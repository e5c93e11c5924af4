// WanProxy: a TCP proxy on 127.0.0.1 that makes a loopback server look like one across a WAN.
//
// This kernel has no netem, so latency and bandwidth limits are made here, in user space:
//   - delay: every chunk of bytes is released `one_way_delay` after it arrived, in each
//     direction (round trip = 2 x delay). It is a pipeline, not a stop-and-wait: a long transfer
//     keeps its bandwidth and pays the delay once;
//   - bandwidth caps: per connection and for all connections together (token buckets);
//   - a cap on concurrent connections (more wait in the listen backlog).
// Faults (for the reliability suites), drawn from a seeded generator with probability `rate`
// among the `kinds` given. Faults of a body are drawn per accepted connection (the first
// connection always gets one) and fire once `offset` bytes (uniform below max_offset) have gone
// to the client:
//   truncate  the connection is shut down there (the client sees the body end early, with the
//             full Content-Length promised);
//   reset     the connection is reset there (the client's read fails with ECONNRESET);
//   stall     nothing more is sent for `stall`, then the transfer goes on;
//   flip      one bit of the byte at the offset is inverted;
//             (after a stall or a flip the connection goes on, and with probability `rate`
//             another of the same kind follows within max_offset bytes);
//   slow      from there on the connection trickles at `slow_bytes_per_s` until the client
//             gives up on it.
// Faults of a request are drawn per request (the first request always gets one), so that they
// hit a share of the requests however long a client keeps its connections:
//   refuse    the connection is closed as soon as the request arrives, with no reply (on a new
//             connection: as soon as it is used);
//   http503   the request is answered "503 Slow Down" (S3's throttling reply) by the proxy
//             itself, and the connection closed;
//   busy      the same with Azure's "503 Server Busy";
//   http500   the same with "500 Internal Server Error".
// Lies are request faults too: the proxy sends the GET to the server on a connection of its own,
// rewrites the whole reply (lying_reply.h: a short body with a Content-Length that says so,
// another range than asked, the whole object for a range, an HTML page with 200, another ETag
// or 412 to If-Match), sends that and closes the connection. A lie that does not fit the request
// (not a GET) is not told or counted, and the request goes on as asked; one that does not fit
// the reply (the whole object for a reply that is whole already) sends that reply as it was,
// uncounted.
// Throttling (not drawn at random): with `throttle.requests_per_s` set, requests beyond that rate
// (a token bucket holding one second's worth) are answered as a throttled service answers -
// S3's 503 SlowDown, Azure's 503 ServerBusy or GCS's 429, with a Retry-After - counted as the
// "throttle" fault. A client that keeps its whole concurrency hammering gets most of its
// requests refused; one that backs off gets through. With bursts, it throttles only for a
// while every so often, as a store does when other tenants share the prefix.
// A request is a client chunk that begins with an HTTP method and a space (a request body that
// begins so would be taken for one; ferry's reads send no bodies). Stats counts the requests
// and the faults that fired, by kind, and the bytes to the client: in all, and the replies'
// bodies alone (reply_bodies.h).
//
// Each direction of each connection is a reader thread (timestamps chunks into a bounded queue)
// and a writer thread (sends each chunk when its time comes, at the allowed rate). The queue
// bound limits memory and pushes back on the sender through TCP, as a real path's buffers do.
//
// Thread-safety: Start once; Stats from any thread; Stop (or the destructor) joins everything.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ferry/result.h"

namespace ferry::wan {

enum class FaultKind {
  kTruncate,
  kStall,
  kFlip,
  kRefuse,
  kHttp503,
  kServerBusy,
  kHttp500,
  kSlow,
  kReset,
  kThrottle,  // not drawn: a request over WanOptions::throttle's rate
  // Lies (lying_reply.h): the reply is rewritten, not failed.
  kShort,
  kOtherRange,
  kWhole,
  kHtml,
  kEtag
};
inline constexpr int kFaultKinds = 15;

/// True for the kinds drawn per request (refuse, http503, busy, http500, throttle, and the
/// lies: short, range, whole, html, etag).
bool IsRequestFault(FaultKind kind);

/// "truncate", "stall", "flip", "refuse", "http503", "busy", "http500", "slow", "reset",
/// "short", "range", "whole", "html", "etag"; kInvalidArgument otherwise.
Result<FaultKind> ParseFaultKind(std::string_view name);
std::string_view FaultKindName(FaultKind kind);

struct FaultOptions {
  double rate = 0;  // fraction of connections (body faults) and of requests (request faults)
  std::vector<FaultKind> kinds;
  uint64_t seed = 1;
  uint64_t max_offset = uint64_t{1} << 20;
  std::chrono::milliseconds stall{1000};
  double slow_bytes_per_s = 1024;
};

struct ThrottleOptions {
  double requests_per_s = 0;   // 0: no throttling
  std::string reply = "s3";    // "s3", "azure" or "gcs"
  uint32_t retry_after_s = 1;  // 0: no Retry-After header
  // Bursts: throttling only for the first `burst_s` of every `every_s` seconds from the start
  // (every_s 0: all the time).
  double burst_s = 0;
  double every_s = 0;
};

struct WanOptions {
  std::string target_host = "127.0.0.1";
  uint16_t target_port = 0;
  uint16_t listen_port = 0;  // 0: any free port
  std::chrono::microseconds one_way_delay{0};
  double per_connection_bytes_per_s = 0;  // 0: no cap
  double total_bytes_per_s = 0;           // 0: no cap
  uint32_t max_connections = 0;           // 0: no cap
  size_t queue_bytes = size_t{64} << 20;  // per direction per connection
  FaultOptions faults;
  ThrottleOptions throttle;
};

struct WanStats {
  uint64_t connections = 0;
  uint64_t requests = 0;
  uint64_t bytes_to_server = 0;
  uint64_t bytes_to_client = 0;
  /// Of those, the content of the server's replies: bodies without headers or chunk framing
  /// (reply_bodies.h), what a client counts as bytes received.
  uint64_t body_bytes_to_client = 0;
  uint32_t active = 0;
  std::array<uint64_t, kFaultKinds> faults{};  // fired, by FaultKind
};

class WanProxy {
 public:
  static Result<std::unique_ptr<WanProxy>> Start(WanOptions options);
  ~WanProxy();
  uint16_t port() const { return port_; }
  WanStats Stats() const;
  void Stop();

 private:
  struct Impl;
  explicit WanProxy(std::unique_ptr<Impl> impl, uint16_t port);
  std::unique_ptr<Impl> impl_;
  uint16_t port_;
};

}  // namespace ferry::wan
