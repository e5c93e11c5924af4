#include "base/tcp_listener.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/fork_guard.h"
#include "base/mutex.h"

namespace ferry {
namespace {

// The listening sockets of this process (closed in a forked child).
struct ListeningSockets {
  Mutex mu;
  std::set<int> fds GUARDED_BY(mu);
};

void CloseSocketsInChild();

ListeningSockets& Sockets() {
  static auto* sockets = [] {
    auto* s = new ListeningSockets();  // never destroyed: servers may outlive statics
    LockAcrossFork(s->mu, CloseSocketsInChild);
    return s;
  }();
  return *sockets;
}

void CloseSocketsInChild() NO_THREAD_SAFETY_ANALYSIS {
  ListeningSockets& s = Sockets();
  for (const int fd : s.fds) ::close(fd);
  s.fds.clear();
}

}  // namespace

TcpListener::TcpListener(int fd, uint16_t port) : fd_(fd), port_(port) {
  ListeningSockets& s = Sockets();
  MutexLock lock(s.mu);
  s.fds.insert(fd_);
}

TcpListener::~TcpListener() {
  ListeningSockets& s = Sockets();
  MutexLock lock(s.mu);
  s.fds.erase(fd_);
  ::close(fd_);
}

Result<std::unique_ptr<TcpListener>> TcpListener::Listen(const std::string& host, uint16_t port,
                                                         std::string_view what,
                                                         std::string_view port_option) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError(
        fmt::format("{}: {} is not an IPv4 address to listen on", what, host));
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus(errno, "socket", std::string(what));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 64) != 0) {
    const int error = errno;
    ::close(fd);
    return error == EADDRINUSE
               ? AlreadyExistsError(fmt::format("{}: {}:{} is in use; choose another {}", what,
                                                host, port, port_option))
               : ErrnoToStatus(error, "listening", fmt::format("{}:{}", host, port));
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<TcpListener>(new TcpListener(fd, ntohs(addr.sin_port)));
}

int TcpListener::Accept(std::chrono::milliseconds wait) {
  pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return -1;
  const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (client < 0) {
    // Out of descriptors, say: the connection waits in the backlog; do not spin on it.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return client;
}

bool ReceiveHttpHead(int fd, std::string& buffer, std::chrono::steady_clock::time_point deadline,
                     size_t max_bytes) {
  char chunk[4096];
  while (buffer.find("\r\n\r\n") == std::string::npos) {
    if (buffer.size() >= max_bytes) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  return true;
}

bool SendAll(int fd, std::string_view data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace ferry
