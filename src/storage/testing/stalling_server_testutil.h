// StallingServer: an HTTP server on 127.0.0.1 whose connections stall. It reads each request
// and answers with nothing, or with the headers of a large body and its first bytes, and then
// sends no more until it is destroyed - what a cross-cloud connection that hangs looks like to
// the client. Test-only.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ferry::testing {

class StallingServer {
 public:
  enum class Stall { kBeforeHeaders, kMidBody };

  /// Bytes of the body sent before the stall (kMidBody), and the size of the object it
  /// claims to send.
  static constexpr size_t kBytesBeforeStall = 1000;
  static constexpr uint64_t kObjectBytes = 1 << 20;

  explicit StallingServer(Stall where) : where_(where) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::abort();
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::jthread([this](std::stop_token stop) { Serve(stop); });
  }

  ~StallingServer() {
    thread_.request_stop();
    thread_.join();
    for (int fd : connections_) ::close(fd);
    ::close(listener_);
  }

  StallingServer(const StallingServer&) = delete;
  StallingServer& operator=(const StallingServer&) = delete;

  std::string Url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + std::string(path);
  }
  /// Requests read (and answered up to the stall) so far.
  int requests() const { return requests_.load(); }

 private:
  // Waits up to 10 ms for `fd` to become readable; false when it did not.
  static bool Readable(int fd) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    return ::poll(&p, 1, 10) == 1;
  }

  // The headers of an answer to `request` about an object of kObjectBytes: 206 with its
  // Content-Range for "Range: bytes=A-B", else 200.
  static std::string Headers(const std::string& request) {
    constexpr std::string_view kRange = "Range: bytes=";
    const size_t at = request.find(kRange);
    if (at == std::string::npos) {
      return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kObjectBytes) +
             "\r\nETag: \"stall\"\r\n\r\n";
    }
    const uint64_t first = std::strtoull(request.c_str() + at + kRange.size(), nullptr, 10);
    const size_t dash = request.find('-', at + kRange.size());
    const uint64_t last = std::strtoull(request.c_str() + dash + 1, nullptr, 10);
    return "HTTP/1.1 206 Partial Content\r\nContent-Length: " + std::to_string(last - first + 1) +
           "\r\nContent-Range: bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
           std::to_string(kObjectBytes) + "\r\nETag: \"stall\"\r\n\r\n";
  }

  void Serve(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      if (!Readable(listener_)) continue;
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      connections_.push_back(fd);  // kept open, silent, until the server goes
      std::string request;
      while (!stop.stop_requested() && request.find("\r\n\r\n") == std::string::npos) {
        if (!Readable(fd)) continue;
        char buffer[4096];
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      if (request.find("\r\n\r\n") == std::string::npos) continue;  // closed, or stopping
      ++requests_;
      if (where_ == Stall::kMidBody) {
        const std::string response = Headers(request) + std::string(kBytesBeforeStall, 'x');
        (void)!::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
      }
    }
  }

  const Stall where_;
  int listener_ = -1;
  uint16_t port_ = 0;
  std::vector<int> connections_;  // touched by the server thread only, until it is joined
  std::atomic<int> requests_{0};
  std::jthread thread_;
};

}  // namespace ferry::testing
