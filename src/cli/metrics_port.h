// --metrics-port / --metrics-host: a command (`ferry stream`, `ferry top`) serving Prometheus'
// text exposition while it runs (ferry/metrics/prometheus.h): the node-wide sums of its cache
// folders, each labelled with its folder, or - without a folder - the process's own counters.
//
// Thread-safety: functions only; the server answers from its own thread.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "ferry/metrics/prometheus.h"
#include "ferry/result.h"

namespace ferry::cli {

void AddMetricsPortOptions(CLI::App& app, int& port, std::string& host);

/// A server on `host`:`port` (null when `port` is -1); `announce` prints where on stderr.
Result<std::unique_ptr<metrics::MetricsServer>> ServeMetrics(int port, const std::string& host,
                                                             std::vector<std::string> folders,
                                                             bool announce);
inline Result<std::unique_ptr<metrics::MetricsServer>> ServeMetrics(int port,
                                                                    const std::string& host,
                                                                    const std::string& folder,
                                                                    bool announce) {
  return ServeMetrics(port, host, folder.empty() ? std::vector<std::string>{} : std::vector{folder},
                      announce);
}

}  // namespace ferry::cli
