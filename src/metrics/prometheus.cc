#include "ferry/metrics/prometheus.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/fork_guard.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/stoppable_sleep.h"
#include "ferry/metrics/metrics.h"

namespace ferry::metrics {
namespace {

struct PromName {
  std::string name;
  std::map<std::string, std::string> labels;
};

// "/ferry/storage/s3/bytes_read" -> ferry_storage_bytes_read {store="s3"}; other names have
// their slashes made underscores. Characters Prometheus does not allow become '_'.
PromName ToPromName(std::string_view name) {
  PromName out;
  if (auto store = SplitStoreMetric(name)) {
    out.labels["store"] = std::string(store->scheme);
    name = store->what;
    out.name = "ferry_storage_";
  }
  if (name.starts_with('/')) name.remove_prefix(1);
  for (const char c : name) {
    out.name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  }
  return out;
}

std::string Escape(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string Labels(const std::map<std::string, std::string>& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ',';
    out += fmt::format("{}=\"{}\"", k, Escape(v));
  }
  return out + "}";
}

// The listening sockets of this process's servers. A fork()ed child (a DataLoader worker) does
// not serve - the thread is the parent's - and must not keep the port bound after the parent
// closes it: it closes its copies at once.
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

class SocketMetricsServer : public MetricsServer {
 public:
  SocketMetricsServer(int fd, uint16_t port, std::function<std::string()> text)
      : fd_(fd), port_(port), text_(std::move(text)) {
    {
      ListeningSockets& s = Sockets();
      MutexLock lock(s.mu);
      s.fds.insert(fd_);
    }
    thread_ = std::jthread([this](std::stop_token stop) { Serve(stop); });
  }
  ~SocketMetricsServer() override {
    thread_.request_stop();
    thread_.join();
    ListeningSockets& s = Sockets();
    MutexLock lock(s.mu);
    s.fds.erase(fd_);
    ::close(fd_);
  }
  uint16_t port() const override { return port_; }

 private:
  void Serve(std::stop_token stop) {
    while (!stop.stop_requested()) {
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, 200) <= 0) continue;  // wakes to look at `stop`
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) {
        // Out of descriptors, say: the connection waits in the backlog; do not spin on it.
        SleepUnlessStopped(std::chrono::milliseconds(50), stop);
        continue;
      }
      Answer(client);
      ::close(client);
    }
  }

  // One request per connection; a client that says nothing for 2 s is dropped.
  void Answer(int client) {
    std::string request;
    char buf[2048];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{.fd = client, .events = POLLIN, .revents = 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
      const ssize_t n = ::recv(client, buf, sizeof buf, 0);
      if (n <= 0) return;
      request.append(buf, static_cast<size_t>(n));
    }
    const bool metrics = request.starts_with("GET /metrics ") ||
                         request.starts_with("GET /metrics?") || request.starts_with("GET / ");
    const std::string body = metrics ? text_() : "not found: ask for /metrics\n";
    const std::string response = fmt::format(
        "HTTP/1.0 {}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        metrics ? "200 OK" : "404 Not Found", body.size(), body);
    size_t sent = 0;
    while (sent < response.size()) {
      const ssize_t n =
          ::send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  const int fd_;
  const uint16_t port_;
  const std::function<std::string()> text_;
  std::jthread thread_;
};

}  // namespace

std::string PrometheusText(const std::vector<PrometheusSource>& sources) {
  // Grouped by metric name: the format wants one TYPE line before all samples of a name.
  std::map<std::string, std::pair<bool, std::vector<std::string>>> families;
  for (const PrometheusSource& source : sources) {
    for (const auto& [name, value] : source.values) {
      PromName p = ToPromName(name);
      const bool gauge = source.gauges.contains(name);
      if (!gauge) p.name += "_total";
      for (const auto& [k, v] : source.labels) p.labels.emplace(k, v);
      auto& family = families[p.name];
      family.first = gauge;
      family.second.push_back(fmt::format("{}{} {}", p.name, Labels(p.labels), value));
    }
  }
  std::string out;
  for (const auto& [name, family] : families) {
    out += fmt::format("# TYPE {} {}\n", name, family.first ? "gauge" : "counter");
    for (const std::string& sample : family.second) out += sample + "\n";
  }
  return out;
}

std::string ProcessPrometheusText() {
  std::map<std::string, int64_t> values;
  std::set<std::string> gauges;
  for (const Metric& m : All()) {
    values[m.name] = m.value;
    if (m.gauge) gauges.insert(m.name);
  }
  return PrometheusText(values, gauges);
}

PrometheusSource NodePrometheusSource(const NodeMetrics& node, const std::string& folder) {
  return {.values = node.values, .gauges = node.gauges, .labels = {{"folder", folder}}};
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(std::function<std::string()> text,
                                                            uint16_t port,
                                                            const std::string& host) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError(
        fmt::format("metrics server: {} is not an IPv4 address to listen on", host));
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus(errno, "socket", "metrics server");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 16) != 0) {
    const int error = errno;
    ::close(fd);
    return error == EADDRINUSE
               ? AlreadyExistsError(fmt::format(
                     "metrics server: {}:{} is in use; choose another --metrics-port", host, port))
               : ErrnoToStatus(error, "listening", fmt::format("{}:{}", host, port));
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<MetricsServer>(
      new SocketMetricsServer(fd, ntohs(addr.sin_port), std::move(text)));
}

}  // namespace ferry::metrics
