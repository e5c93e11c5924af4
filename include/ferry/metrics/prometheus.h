// Prometheus: ferry's counters and gauges in Prometheus' text exposition format (version 0.0.4),
// and a small HTTP server that answers GET /metrics with them - so that a cluster's dashboards
// scrape a training job, `ferry stream` or `ferry top` (`--metrics-port`, `ferry.serve_metrics`).
//
// Names: "/ferry/cache/downloaded_bytes" becomes ferry_cache_downloaded_bytes_total (a counter:
// "_total" appended) and "/ferry/stream/bytes_in_flight" ferry_stream_bytes_in_flight (a gauge);
// a store's "/ferry/storage/s3/bytes_read" becomes ferry_storage_bytes_read_total{store="s3"}.
// Every sample carries the server's labels (folder="..." for a cache folder's node-wide sums).
//
// Thread-safety: PrometheusText is a function; a MetricsServer answers from its own thread and
// is destroyed from the thread that made it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ferry/metrics/node_metrics.h"
#include "ferry/result.h"

namespace ferry::metrics {

/// Values to expose: gauges named in `gauges`, the rest counters, each sample with `labels`.
struct PrometheusSource {
  std::map<std::string, int64_t> values;
  std::set<std::string> gauges;
  std::map<std::string, std::string> labels;
};

/// The exposition of every source's values (one family per name across the sources).
std::string PrometheusText(const std::vector<PrometheusSource>& sources);
inline std::string PrometheusText(const std::map<std::string, int64_t>& values,
                                  const std::set<std::string>& gauges,
                                  const std::map<std::string, std::string>& labels = {}) {
  return PrometheusText({PrometheusSource{values, gauges, labels}});
}

/// This process's counters and gauges (metrics.h).
std::string ProcessPrometheusText();

/// A cache folder's node-wide sums (node_metrics.h), each sample labelled folder="<folder>".
PrometheusSource NodePrometheusSource(const NodeMetrics& node, const std::string& folder);

class MetricsServer {
 public:
  /// Listens on `host`:`port` (port 0: any free one) and answers GET /metrics with what `text`
  /// returns then (any other path: 404). Loopback by default: a training node's counters are
  /// not for the whole network unless asked.
  static Result<std::unique_ptr<MetricsServer>> Start(std::function<std::string()> text,
                                                      uint16_t port,
                                                      const std::string& host = "127.0.0.1");
  virtual ~MetricsServer() = default;
  /// The port it listens on.
  virtual uint16_t port() const = 0;
};

}  // namespace ferry::metrics
