#include "bench/wan/wan_proxy.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <optional>
#include <random>
#include <tuple>

#include "base/file_util.h"
#include "bench/wan/lying_reply.h"
#include "bench/wan/reply_bodies.h"

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

// One connection's planned fault (the down direction's).
struct Fault {
  FaultKind kind = FaultKind::kTruncate;
  uint64_t offset = 0;
  std::chrono::milliseconds stall{0};
  std::atomic<uint64_t>* fired = nullptr;  // the counter of its kind
  // A stall or a flip leaves the connection up: with probability `rate` another one follows
  // within `max_offset` bytes, drawn from `seed` (so the schedule stays a function of it).
  double rate = 0;
  uint64_t max_offset = 0;
  uint64_t seed = 0;
};

// What the up direction (client to server) needs to fault requests: the draw, both sockets,
// and the counters.
struct RequestFaults {
  std::function<std::optional<FaultKind>()> draw;
  std::function<Result<int>()> dial;  // a connection of the proxy's own to the server
  std::function<uint64_t()> random;   // a lie's free choices
  int client = -1, server = -1;
  std::atomic<uint64_t>* requests = nullptr;
  std::array<std::atomic<uint64_t>, kFaultKinds>* fired = nullptr;
};

bool StartsARequest(std::string_view data) {
  for (std::string_view method : {"GET ", "HEAD ", "PUT ", "POST ", "DELETE "}) {
    if (data.starts_with(method)) return true;
  }
  return false;
}

// The proxy's own reply for an error fault: S3's throttling reply, Azure's, or a plain internal
// error; for a throttled request, the throttled service's, with its Retry-After.
std::string ErrorReply(FaultKind kind, const ThrottleOptions& throttle) {
  std::string extra;
  if (kind == FaultKind::kThrottle) {
    kind = throttle.reply == "azure" ? FaultKind::kServerBusy : FaultKind::kHttp503;
    if (throttle.retry_after_s > 0)
      extra = fmt::format("Retry-After: {}\r\n", throttle.retry_after_s);
    if (throttle.reply == "gcs") {
      const std::string body = "{\"error\": {\"code\": 429, \"message\": \"rate limit exceeded\"}}";
      return fmt::format(
          "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n{}"
          "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
          extra, body.size(), body);
    }
  }
  const auto [status, code, message] =
      kind == FaultKind::kHttp503
          ? std::tuple{"503 Slow Down", "SlowDown", "Please reduce your request rate."}
      : kind == FaultKind::kServerBusy
          ? std::tuple{"503 Server Busy", "ServerBusy",
                       "The server is currently unable to receive requests."}
          : std::tuple{"500 Internal Server Error", "InternalError",
                       "We encountered an internal error. Please try again."};
  const std::string body = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{}</Code><Message>{}</Message>"
      "</Error>",
      code, message);
  return fmt::format(
      "HTTP/1.1 {}\r\nContent-Type: application/xml\r\n{}{}Content-Length: {}\r\n"
      "Connection: close\r\n\r\n{}",
      status, extra, kind == FaultKind::kServerBusy ? "x-ms-error-code: ServerBusy\r\n" : "",
      body.size(), body);
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// One direction of one connection: bytes read from `from` are written to `to` `delay` later.
class Direction {
 public:
  Direction(int from, int to, const WanOptions& options, Pacer* total,
            std::atomic<uint64_t>* counter, std::optional<Fault> fault, ReplyBodies* bodies,
            const RequestFaults* requests = nullptr)
      : from_(from),
        to_(to),
        options_(options),
        own_(options.per_connection_bytes_per_s),
        total_(total),
        counter_(counter),
        fault_(fault),
        bodies_(bodies),
        requests_(requests) {}

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
      if (requests_ != nullptr && StartsARequest(chunk.data)) {
        requests_->requests->fetch_add(1, std::memory_order_relaxed);
        bodies_->Asked(std::string_view(chunk.data).substr(0, chunk.data.find(' ')));
        if (const auto kind = requests_->draw()) {
          if (!IsLie(*kind)) {
            FailRequest(*kind, stop);
            return;
          }
          if (TellLie(*kind, chunk.data, stop)) return;
          // A lie that does not fit: the request goes on as asked.
        }
      }
      if (fault_ && sent_ + chunk.data.size() > fault_->offset) {
        // The fault fires inside this chunk.
        // (A re-armed fault may fall behind what was sent: it fires at this chunk's start.)
        const size_t at =
            fault_->offset > sent_ ? static_cast<size_t>(fault_->offset - sent_) : size_t{0};
        switch (fault_->kind) {
          case FaultKind::kFlip:
            chunk.data[at] = static_cast<char>(chunk.data[at] ^ 0x10);
            break;
          case FaultKind::kTruncate:
          case FaultKind::kReset:
            chunk.data.resize(at);
            break;
          default:
            break;
        }
        const FaultKind kind = fault_->kind;
        const auto stall = fault_->stall;
        fault_->fired->fetch_add(1, std::memory_order_relaxed);
        std::mt19937_64 next(fault_->seed);
        const bool ends = kind == FaultKind::kTruncate || kind == FaultKind::kReset;
        if (!ends && kind != FaultKind::kSlow && fault_->max_offset > 0 &&
            std::uniform_real_distribution<double>(0, 1)(next) < fault_->rate) {
          fault_->offset += 1 + next() % fault_->max_offset;
          fault_->seed = next();
        } else {
          fault_.reset();
        }
        if (kind == FaultKind::kTruncate) {
          if (!Send(chunk.data, stop)) return;
          ::shutdown(to_, SHUT_RDWR);
          ::shutdown(from_, SHUT_RDWR);
          return;
        }
        if (kind == FaultKind::kReset) {
          if (!Send(chunk.data, stop)) return;
          Reset(to_);
          ::shutdown(from_, SHUT_RDWR);
          return;
        }
        if (kind == FaultKind::kStall) {
          std::unique_lock lock(mu_);
          cv_.wait_for(lock, stop, stall, [] { return false; });
          if (stop.stop_requested()) return;
        }
        if (kind == FaultKind::kSlow) {
          // Full speed up to the offset, a trickle from there on.
          if (!Send(std::string_view(chunk.data).substr(0, at), stop)) return;
          chunk.data.erase(0, at);
          slow_ = true;  // and stays so (the fault is not re-armed)
        }
      }
      if (!Send(chunk.data, stop)) return;
    }
  }

  // Resets the connection on `fd` (an RST, where shutdown sends a FIN). Only a close with a zero
  // linger sends one, and `fd` stays the connection's until it is reaped: the up direction's
  // reader may be blocked reading it, holding the socket. So: wake that reader, then swap the
  // descriptor for an unconnected socket - the client socket is closed, with its RST, once the
  // reader lets go, and the number is never reused under the other threads.
  static void Reset(int fd) {
    linger zero{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &zero, sizeof zero);
    ::shutdown(fd, SHUT_RD);
    const int placeholder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (placeholder < 0) {
      ::shutdown(fd, SHUT_RDWR);  // a FIN, then
      return;
    }
    ::dup2(placeholder, fd);
    ::close(placeholder);
  }

  // The request has reached the server's side of the path: fail it as `kind` says.
  void FailRequest(FaultKind kind, std::stop_token stop) {
    (*requests_->fired)[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed);
    if (kind != FaultKind::kRefuse) {
      // The reply travels back over the path like any other.
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, stop, options_.one_way_delay, [] { return false; });
      }
      const std::string reply = ErrorReply(kind, options_.throttle);
      (void)!::send(requests_->client, reply.data(), reply.size(), MSG_NOSIGNAL);
    }
    // Both ends go: the client sees the reply (or nothing) and then the connection close.
    ::shutdown(requests_->client, SHUT_RDWR);
    ::shutdown(requests_->server, SHUT_RDWR);
  }

  // Answers `request` with the lie `kind` told of the server's honest reply, fetched on a
  // connection of the proxy's own (the request is sent as it came: its signature covers its
  // headers), then closes the connection; a lie that does not fit that reply sends it as it
  // was. False, with nothing sent, when the request is not one to lie to (or the server could
  // not be asked): it goes on as asked.
  bool TellLie(FaultKind kind, const std::string& request, std::stop_token stop) {
    // One whole GET without a body, as ferry sends them.
    if (!request.starts_with("GET ") || request.find("\r\n\r\n") != request.size() - 4) {
      return false;
    }
    HttpReply reply;
    bool told = true;
    if (kind == FaultKind::kHtml) {
      reply = HtmlErrorPage();  // the proxy's own page: the server is not asked
    } else {
      auto fd = requests_->dial();
      if (!fd) return false;
      Result<HttpReply> honest = InternalError("not sent");
      if (SendAll(*fd, request)) honest = ReadReply(*fd, std::chrono::seconds(30));
      ::close(*fd);
      if (!honest) return false;
      std::optional<HttpReply> lie = Lie(kind, request, *honest, requests_->random());
      // A lie that does not fit the reply: the honest one goes back (the request reached the
      // server already, and must not reach it twice), uncounted.
      told = lie.has_value();
      reply = told ? std::move(*lie) : std::move(*honest);
    }
    if (told) (*requests_->fired)[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed);
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, stop, options_.one_way_delay, [] { return false; });
    }
    reply.SetHeader("Connection", "close");
    (void)SendAll(requests_->client, reply.Serialize());
    ::shutdown(requests_->client, SHUT_RDWR);
    ::shutdown(requests_->server, SHUT_RDWR);
    return true;
  }

  static bool SendAll(int fd, std::string_view data) {
    while (!data.empty()) {
      const ssize_t w = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      data.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }

  // Sends `data` at the allowed rate (a trickle once slowed); false when the peer is gone or
  // the proxy stops.
  bool Send(std::string_view rest, std::stop_token stop) {
    while (!rest.empty() && slow_) {
      // A twentieth of a second's worth at a time, so that a stop is never kept waiting.
      const auto slice =
          std::max<size_t>(1, static_cast<size_t>(options_.faults.slow_bytes_per_s / 20));
      const ssize_t w = ::send(to_, rest.data(), std::min(rest.size(), slice), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      Sent(rest.substr(0, static_cast<size_t>(w)));
      rest.remove_prefix(static_cast<size_t>(w));
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, stop, std::chrono::milliseconds(50), [] { return false; }) ||
          stop.stop_requested()) {
        return false;
      }
    }
    while (!rest.empty()) {
      const size_t n = std::min(rest.size(), kWriteSlice);
      const auto at = std::max(own_.Reserve(n), total_->Reserve(n));
      std::this_thread::sleep_until(at);
      const ssize_t w = ::send(to_, rest.data(), n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      Sent(rest.substr(0, static_cast<size_t>(w)));
      rest.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }

  void Sent(std::string_view bytes) {
    counter_->fetch_add(bytes.size(), std::memory_order_relaxed);
    sent_ += bytes.size();
    if (requests_ == nullptr) bodies_->Sent(bytes);  // replies: the down direction's
  }

  const int from_, to_;
  const WanOptions& options_;
  Pacer own_;
  Pacer* total_;
  std::atomic<uint64_t>* counter_;
  std::optional<Fault> fault_;
  ReplyBodies* bodies_;            // the connection's: the up direction tells, the down counts
  const RequestFaults* requests_;  // the up direction's, else null
  bool slow_ = false;              // a slow fault has fired: trickle from now on
  uint64_t sent_ = 0;              // bytes sent to `to_`
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
  std::atomic<uint64_t> connections{0}, to_server{0}, to_client{0}, bodies_to_client{0};
  std::atomic<uint32_t> active{0};
  std::array<std::atomic<uint64_t>, kFaultKinds> faults{};
  std::atomic<uint64_t> requests{0};
  // What a draw picks from, and how many draws there have been (the first always faults).
  struct FaultDraw {
    std::vector<FaultKind> kinds;
    uint64_t drawn = 0;
  };
  std::mutex random_mu;  // the acceptor and every connection's up direction draw
  std::mt19937_64 random;
  FaultDraw body_draw;         // per connection: the body kinds given
  FaultDraw request_draw;      // per request: the request kinds given
  double throttle_tokens = 0;  // requests the throttle lets through now (guarded by random_mu)
  std::chrono::steady_clock::time_point throttle_filled = std::chrono::steady_clock::now();
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  struct Connection {
    int client = -1, server = -1;
    RequestFaults request_faults;
    std::unique_ptr<ReplyBodies> bodies;
    std::unique_ptr<Direction> up, down;
    std::jthread up_thread, down_thread;
    std::atomic<int> open_directions{2};
  };
  std::mutex mu;
  std::list<std::unique_ptr<Connection>> conns;
  std::jthread acceptor;

  explicit Impl(WanOptions o)
      : options(std::move(o)),
        total(options.total_bytes_per_s),
        random(options.faults.seed),
        throttle_tokens(options.throttle.requests_per_s) {
    for (FaultKind k : options.faults.kinds) {
      (IsRequestFault(k) ? request_draw : body_draw).kinds.push_back(k);
    }
  }

  // One of `d`'s kinds with probability rate - and always for its first draw, so that a short
  // run is never fault-free by chance. \pre random_mu held.
  std::optional<FaultKind> DrawKind(FaultDraw& d) {
    if (options.faults.rate <= 0 || d.kinds.empty()) return std::nullopt;
    const bool first = d.drawn++ == 0;
    if (std::uniform_real_distribution<double>(0, 1)(random) >= options.faults.rate && !first) {
      return std::nullopt;
    }
    return d.kinds[random() % d.kinds.size()];
  }

  // The body fault of the next connection, if it gets one.
  std::optional<Fault> Draw() {
    std::lock_guard lock(random_mu);
    const auto kind = DrawKind(body_draw);
    if (!kind) return std::nullopt;
    const FaultOptions& f = options.faults;
    Fault fault;
    fault.kind = *kind;
    fault.offset = f.max_offset > 0 ? random() % f.max_offset : 0;
    fault.stall = f.stall;
    fault.fired = &faults[static_cast<int>(fault.kind)];
    fault.rate = f.rate;
    fault.max_offset = f.max_offset;
    fault.seed = random();
    return fault;
  }

  // The fault of a request that has just arrived, if it gets one: throttled when over the
  // rate, else drawn.
  std::optional<FaultKind> DrawRequest() {
    std::lock_guard lock(random_mu);
    const auto now = std::chrono::steady_clock::now();
    if (const double rate = options.throttle.requests_per_s; rate > 0 && InBurst(now)) {
      // The bucket holds a second's worth, and at least one request (a rate below 1).
      throttle_tokens = std::min(
          std::max(1.0, rate),
          throttle_tokens + rate * std::chrono::duration<double>(now - throttle_filled).count());
      throttle_filled = now;
      if (throttle_tokens < 1) return FaultKind::kThrottle;
      throttle_tokens -= 1;
    }
    return DrawKind(request_draw);
  }

  // Whether throttling applies at `now` (ThrottleOptions' bursts).
  bool InBurst(std::chrono::steady_clock::time_point now) const {
    const ThrottleOptions& t = options.throttle;
    if (t.every_s <= 0) return true;
    const double since = std::chrono::duration<double>(now - started).count();
    return std::fmod(since, t.every_s) < t.burst_s;
  }

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
        if ((*it)->server >= 0) ::close((*it)->server);
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
      std::optional<Fault> fault = Draw();
      auto server = Dial();
      if (!server) {
        ::close(client);
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->client = client;
      c->server = *server;
      c->request_faults = {[this] { return DrawRequest(); },
                           [this] { return Dial(); },
                           [this] {
                             std::lock_guard lock(random_mu);
                             return random();
                           },
                           client,
                           *server,
                           &requests,
                           &faults};
      c->bodies = std::make_unique<ReplyBodies>(&bodies_to_client);
      c->up = std::make_unique<Direction>(client, *server, options, &total, &to_server,
                                          std::nullopt, c->bodies.get(), &c->request_faults);
      c->down = std::make_unique<Direction>(*server, client, options, &total, &to_client, fault,
                                            c->bodies.get());
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
      if (c->server >= 0) ::shutdown(c->server, SHUT_RDWR);
      c->up_thread.request_stop();
      c->down_thread.request_stop();
    }
    for (auto& c : conns) {
      c->up_thread.join();
      c->down_thread.join();
      ::close(c->client);
      if (c->server >= 0) ::close(c->server);
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
  WanStats stats{impl_->connections.load(),
                 impl_->requests.load(),
                 impl_->to_server.load(),
                 impl_->to_client.load(),
                 impl_->bodies_to_client.load(),
                 impl_->active.load(),
                 {}};
  for (int k = 0; k < kFaultKinds; ++k) stats.faults[k] = impl_->faults[k].load();
  return stats;
}

namespace {
constexpr std::string_view kFaultNames[] = {"truncate", "stall",   "flip",  "refuse", "http503",
                                            "busy",     "http500", "slow",  "reset",  "throttle",
                                            "short",    "range",   "whole", "html",   "etag"};
static_assert(std::size(kFaultNames) == kFaultKinds, "a name for every FaultKind");
}  // namespace

bool IsRequestFault(FaultKind kind) {
  return kind == FaultKind::kRefuse || kind == FaultKind::kHttp503 ||
         kind == FaultKind::kServerBusy || kind == FaultKind::kHttp500 ||
         kind == FaultKind::kThrottle || IsLie(kind);
}

Result<FaultKind> ParseFaultKind(std::string_view name) {
  for (int k = 0; k < kFaultKinds; ++k) {
    if (kFaultNames[k] == name && static_cast<FaultKind>(k) != FaultKind::kThrottle) {
      return static_cast<FaultKind>(k);
    }
  }
  return InvalidArgumentError(fmt::format(
      "unknown fault {} (truncate, reset, stall, flip, slow, refuse, http503, busy, http500, "
      "short, range, whole, html, etag)",
      name));
}

std::string_view FaultKindName(FaultKind kind) { return kFaultNames[static_cast<int>(kind)]; }

}  // namespace ferry::wan
