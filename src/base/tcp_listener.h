// TcpListener: a listening IPv4 socket for ferry's small servers (Prometheus metrics, a node's
// peer server), accepting with a timeout so that the serving thread can look at its stop token.
//
// A fork()ed child (a DataLoader worker) does not serve - the serving thread is the parent's -
// and must not keep the port bound after the parent closes it: it closes its copies of every
// listening socket at once.
//
// Thread-safety: Accept from one thread; port() from any.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/result.h"

namespace ferry {

class TcpListener {
 public:
  /// Listens on `host` (an IPv4 address) and `port` (0: any free one). `what` names the server
  /// in errors; an address in use is kAlreadyExists suggesting `port_option`.
  static Result<std::unique_ptr<TcpListener>> Listen(const std::string& host, uint16_t port,
                                                     std::string_view what,
                                                     std::string_view port_option);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  uint16_t port() const { return port_; }

  /// A connection (close-on-exec descriptor, the caller's to close) that arrives within `wait`,
  /// or -1 when none did (or accepting failed: out of descriptors, say - then after a pause,
  /// leaving the connection in the backlog).
  int Accept(std::chrono::milliseconds wait);

 private:
  TcpListener(int fd, uint16_t port);
  const int fd_;
  const uint16_t port_;
};

/// Receives into `buffer` until it holds the end of an HTTP request's head ("\r\n\r\n"): true
/// then; false when `deadline` passes first, the head grows past `max_bytes`, or the peer
/// closes or fails. Bytes already in `buffer` (what followed the previous request) count.
bool ReceiveHttpHead(int fd, std::string& buffer, std::chrono::steady_clock::time_point deadline,
                     size_t max_bytes = 16384);

/// Sends all of `data` on `fd` (no SIGPIPE); false when the peer went away.
bool SendAll(int fd, std::string_view data);

}  // namespace ferry
