// TopView: what `ferry top` shows of one cache folder - per process and for the node, the rates
// between two readings of its node-wide metrics (ferry/metrics/node_metrics.h) and the folder's
// use against its limit - as lines for a terminal or as JSON for scripts. A pure function of its
// inputs, so that the figures are tested without a terminal.
//
// Rates per second over the interval: samples, MB read from each store, requests; the share of
// the time spent waiting, by cause (the iterator for a shard; the cache on a miss, downloading or
// waiting for another process's download; a node download slot, part of the latter; a file of a
// FileDataset) - 1.00 is one thread waiting all the time; and now: requests in flight, bytes of
// shards downloading ahead.
//
// Thread-safety: functions only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ferry/metrics/node_metrics.h"

namespace ferry::cli {

struct TopReading {
  metrics::NodeMetrics node;
  double at_s = 0;           // a monotonic time
  uint64_t cache_bytes = 0;  // what its cache_limit counts: shards, index.json, ferry's records
};

struct TopFrame {
  std::string folder;
  TopReading now;
  std::optional<TopReading> before;  // none: the first reading, no rates yet
};

/// The frame as text lines (no terminal control codes), at most `width` columns.
std::vector<std::string> RenderTop(const TopFrame& frame, size_t width = 120);

/// The frame as one JSON object: {"folder", "cache": {"bytes", "limit"}, "node": {...},
/// "processes": [{"pid", "label", ...}]}, each row with its cumulative "values" and, from the
/// second reading on, its "rates".
nlohmann::ordered_json TopJson(const TopFrame& frame);

}  // namespace ferry::cli
