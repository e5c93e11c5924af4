// WanProxy: a TCP proxy on 127.0.0.1 that makes a loopback server look like one across a WAN.
//
// This kernel has no netem, so latency and bandwidth limits are made here, in user space:
//   - delay: every chunk of bytes is released `one_way_delay` after it arrived, in each
//     direction (round trip = 2 x delay). It is a pipeline, not a stop-and-wait: a long transfer
//     keeps its bandwidth and pays the delay once;
//   - bandwidth caps: per connection and for all connections together (token buckets);
//   - a cap on concurrent connections (more wait in the listen backlog).
// Each direction of each connection is a reader thread (timestamps chunks into a bounded queue)
// and a writer thread (sends each chunk when its time comes, at the allowed rate). The queue
// bound limits memory and pushes back on the sender through TCP, as a real path's buffers do.
//
// Thread-safety: Start once; Stats from any thread; Stop (or the destructor) joins everything.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ferry/result.h"

namespace ferry::wan {

struct WanOptions {
  std::string target_host = "127.0.0.1";
  uint16_t target_port = 0;
  uint16_t listen_port = 0;  // 0: any free port
  std::chrono::microseconds one_way_delay{0};
  double per_connection_bytes_per_s = 0;  // 0: no cap
  double total_bytes_per_s = 0;           // 0: no cap
  uint32_t max_connections = 0;           // 0: no cap
  size_t queue_bytes = size_t{64} << 20;  // per direction per connection
};

struct WanStats {
  uint64_t connections = 0;
  uint64_t bytes_to_server = 0;
  uint64_t bytes_to_client = 0;
  uint32_t active = 0;
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
