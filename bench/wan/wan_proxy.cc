#include "bench/wan/wan_proxy.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>

#include "base/file_util.h"

namespace ferry::wan {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kReadChunk = 256 << 10;
constexpr size_t kWriteSlice = 64 << 10;  // paced writes go out in slices this big

// A token bucket as "the earliest time the next byte may go": reserving n bytes moves it on by
// n / rate. Shared buckets serialize their users, which is the point of a total cap.
class Pacer {
 public:
  explicit Pacer(double bytes_per_s) : rate_(bytes_per_s) {}
  // When `n` bytes may be sent.
  Clock::time_point Reserve(size_t n) {
    if (rate_ <= 0) return Clock::now();
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    if (next_ < now) next_ = now;
    const auto at = next_;
    next_ += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(n) / rate_));
    return at;
  }

 private:
  const double rate_;
  std::mutex mu_;
  Clock::time_point next_ = Clock::now();
};

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// One direction of one connection: bytes read from `from` are written to `to` `delay` later.
class Direction {
 public:
  Direction(int from, int to, const WanOptions& options, Pacer* total,
            std::atomic<uint64_t>* counter)
      : from_(from),
        to_(to),
        options_(options),
        own_(options.per_connection_bytes_per_s),
        total_(total),
        counter_(counter) {}

  void Run(std::stop_token stop) {
    reader_ = std::jthread([this](std::stop_token s) { Read(s); });
    Write(stop);
    // However the writer ended, the reader must not stay blocked in read().
    ::shutdown(from_, SHUT_RD);
    reader_.request_stop();
    reader_.join();
  }

 private:
  struct Chunk {
    Clock::time_point ready;
    std::string data;  // empty: the end of the stream
  };

  void Push(Chunk chunk, std::stop_token stop) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, stop, [&] { return queued_ < options_.queue_bytes; });
    queued_ += chunk.data.size();
    queue_.push_back(std::move(chunk));
    cv_.notify_all();
  }

  void Read(std::stop_token stop) {
    std::string buffer(kReadChunk, '\0');
    for (;;) {
      const ssize_t n = ::read(from_, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || stop.stop_requested()) break;
      Push({Clock::now() + options_.one_way_delay, buffer.substr(0, static_cast<size_t>(n))}, stop);
    }
    Push({Clock::now() + options_.one_way_delay, {}}, stop);
  }

  void Write(std::stop_token stop) {
    for (;;) {
      Chunk chunk;
      {
        std::unique_lock lock(mu_);
        if (!cv_.wait(lock, stop, [&] { return !queue_.empty(); })) return;
        chunk = std::move(queue_.front());
        queue_.pop_front();
        queued_ -= chunk.data.size();
        cv_.notify_all();
        // Hold the chunk until its time has come.
        cv_.wait_until(lock, stop, chunk.ready, [] { return false; });
        if (stop.stop_requested()) return;
      }
      if (chunk.data.empty()) {
        ::shutdown(to_, SHUT_WR);  // pass the end of the stream on
        return;
      }
      std::string_view rest = chunk.data;
      while (!rest.empty()) {
        const size_t n = std::min(rest.size(), kWriteSlice);
        const auto at = std::max(own_.Reserve(n), total_->Reserve(n));
        std::this_thread::sleep_until(at);
        const ssize_t w = ::send(to_, rest.data(), n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        counter_->fetch_add(static_cast<uint64_t>(w), std::memory_order_relaxed);
        rest.remove_prefix(static_cast<size_t>(w));
      }
    }
  }

  const int from_, to_;
  const WanOptions& options_;
  Pacer own_;
  Pacer* total_;
  std::atomic<uint64_t>* counter_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Chunk> queue_;
  size_t queued_ = 0;
  std::jthread reader_;
};

}  // namespace

struct WanProxy::Impl {
  WanOptions options;
  int listen_fd = -1;
  Pacer total{0};
  std::atomic<uint64_t> connections{0}, to_server{0}, to_client{0};
  std::atomic<uint32_t> active{0};

  struct Connection {
    int client = -1, server = -1;
    std::unique_ptr<Direction> up, down;
    std::jthread up_thread, down_thread;
    std::atomic<int> open_directions{2};
  };
  std::mutex mu;
  std::list<std::unique_ptr<Connection>> conns;
  std::jthread acceptor;

  explicit Impl(WanOptions o) : options(std::move(o)), total(options.total_bytes_per_s) {}

  Result<int> Dial() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return ErrnoToStatus(errno, "socket", "target");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(options.target_port);
    ::inet_pton(AF_INET, options.target_host.c_str(), &addr.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      const int err = errno;
      ::close(fd);
      return UnavailableError(fmt::format("connect to {}:{}: {}", options.target_host,
                                          options.target_port, std::strerror(err)));
    }
    SetNoDelay(fd);
    return fd;
  }

  void Reap() {
    std::lock_guard lock(mu);
    for (auto it = conns.begin(); it != conns.end();) {
      if ((*it)->open_directions.load() == 0) {
        (*it)->up_thread.join();
        (*it)->down_thread.join();
        ::close((*it)->client);
        ::close((*it)->server);
        active.fetch_sub(1);
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }

  void Accept(std::stop_token stop) {
    while (!stop.stop_requested()) {
      Reap();
      if (options.max_connections > 0 && active.load() >= options.max_connections) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      pollfd p{listen_fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      SetNoDelay(client);
      auto server = Dial();
      if (!server) {
        ::close(client);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->client = client;
      c->server = *server;
      c->up = std::make_unique<Direction>(client, *server, options, &total, &to_server);
      c->down = std::make_unique<Direction>(*server, client, options, &total, &to_client);
      Connection* raw = c.get();
      raw->up_thread = std::jthread([raw](std::stop_token s) {
        raw->up->Run(s);
        raw->open_directions.fetch_sub(1);
      });
      raw->down_thread = std::jthread([raw](std::stop_token s) {
        raw->down->Run(s);
        raw->open_directions.fetch_sub(1);
      });
      connections.fetch_add(1);
      active.fetch_add(1);
      std::lock_guard lock(mu);
      conns.push_back(std::move(c));
    }
  }

  void Stop() {
    acceptor.request_stop();
    if (acceptor.joinable()) acceptor.join();
    std::lock_guard lock(mu);
    for (auto& c : conns) {
      ::shutdown(c->client, SHUT_RDWR);  // wakes blocked reads and writes
      ::shutdown(c->server, SHUT_RDWR);
      c->up_thread.request_stop();
      c->down_thread.request_stop();
    }
    for (auto& c : conns) {
      c->up_thread.join();
      c->down_thread.join();
      ::close(c->client);
      ::close(c->server);
    }
    conns.clear();
    if (listen_fd >= 0) ::close(listen_fd);
    listen_fd = -1;
  }
};

Result<std::unique_ptr<WanProxy>> WanProxy::Start(WanOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus(errno, "socket", "listen");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(impl->options.listen_port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 1024) != 0) {
    const int err = errno;
    ::close(fd);
    return UnavailableError(
        fmt::format("listen on 127.0.0.1:{}: {}", impl->options.listen_port, std::strerror(err)));
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  impl->listen_fd = fd;
  Impl* raw = impl.get();
  impl->acceptor = std::jthread([raw](std::stop_token s) { raw->Accept(s); });
  return std::unique_ptr<WanProxy>(new WanProxy(std::move(impl), ntohs(addr.sin_port)));
}

WanProxy::WanProxy(std::unique_ptr<Impl> impl, uint16_t port)
    : impl_(std::move(impl)), port_(port) {}
WanProxy::~WanProxy() { Stop(); }
void WanProxy::Stop() {
  if (impl_) impl_->Stop();
}

WanStats WanProxy::Stats() const {
  return {impl_->connections.load(), impl_->to_server.load(), impl_->to_client.load(),
          impl_->active.load()};
}

}  // namespace ferry::wan
