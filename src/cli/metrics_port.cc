#include "cli/metrics_port.h"

#include <cstdio>

#include "ferry/cache/shard_cache.h"

namespace ferry::cli {

void AddMetricsPortOptions(CLI::App& app, int& port, std::string& host) {
  app.add_option("--metrics-port", port,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics while running (0: any "
                 "free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--metrics-host", host,
                 "Address the metrics server listens on (default 127.0.0.1: this machine only)")
      ->capture_default_str();
}

Result<std::unique_ptr<metrics::MetricsServer>> ServeMetrics(int port, const std::string& host,
                                                             std::vector<std::string> folders,
                                                             bool announce) {
  if (port < 0) return std::unique_ptr<metrics::MetricsServer>();
  auto text = [folders = std::move(folders)] { return CacheFoldersPrometheusText(folders); };
  FERRY_ASSIGN_OR_RETURN(auto server, metrics::MetricsServer::Start(
                                          std::move(text), static_cast<uint16_t>(port), host));
  if (announce) {
    std::fprintf(stderr, "metrics: http://%s:%u/metrics\n", host.c_str(), server->port());
  }
  return server;
}

}  // namespace ferry::cli
