#include "ferry/metrics/prometheus.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "base/log.h"
#include "base/tcp_listener.h"
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

class SocketMetricsServer : public MetricsServer {
 public:
  SocketMetricsServer(std::unique_ptr<TcpListener> listener, std::function<std::string()> text)
      : listener_(std::move(listener)), text_(std::move(text)) {
    thread_ = std::jthread([this](std::stop_token stop) { Serve(stop); });
  }
  ~SocketMetricsServer() override {
    thread_.request_stop();
    thread_.join();
  }
  uint16_t port() const override { return listener_->port(); }

 private:
  void Serve(std::stop_token stop) {
    while (!stop.stop_requested()) {
      const int client = listener_->Accept(std::chrono::milliseconds(200));  // then looks at `stop`
      if (client < 0) continue;
      Answer(client);
      ::close(client);
    }
  }

  // One request per connection; a client that says nothing for 2 s is dropped.
  void Answer(int client) {
    std::string request;
    if (!ReceiveHttpHead(client, request,
                         std::chrono::steady_clock::now() + std::chrono::seconds(2))) {
      return;
    }
    const bool metrics = request.starts_with("GET /metrics ") ||
                         request.starts_with("GET /metrics?") || request.starts_with("GET / ");
    const std::string body = metrics ? text_() : "not found: ask for /metrics\n";
    const std::string response = fmt::format(
        "HTTP/1.0 {}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        metrics ? "200 OK" : "404 Not Found", body.size(), body);
    SendAll(client, response);
  }

  const std::unique_ptr<TcpListener> listener_;
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
  FERRY_ASSIGN_OR_RETURN(auto listener,
                         TcpListener::Listen(host, port, "metrics server", "--metrics-port"));
  return std::unique_ptr<MetricsServer>(
      new SocketMetricsServer(std::move(listener), std::move(text)));
}

}  // namespace ferry::metrics
