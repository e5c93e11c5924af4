// Metrics: what happened, cheaply. Each component declares counters and gauges under a
// hierarchical name ("/ferry/cache/hits") in the process-wide registry and bumps them with
// relaxed atomics; Snapshot() reads them all as JSON (for `ferry stream --json`, `ferry stats`
// and the Python layer's dict).
//
// Counter: only goes up (bytes fetched, requests, evictions). Gauge: goes up and down (bytes in
// flight, the chosen window). Durations are counters of nanoseconds ("/ferry/stream/wait_ns").
//
// A fork()ed child (a torch DataLoader worker) starts with every counter and gauge at zero: its
// metrics are its own, so that a node's sum (node_metrics.h) does not count the parent's twice.
//
// Thread-safety: everything here may be used from any thread. Metric objects live as long as the
// process (the registry never forgets them), so references may be kept.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::metrics {

class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  friend class ForkReset;  // zeroes a forked child's counters
  void Reset() { value_.store(0, std::memory_order_relaxed); }

  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t d) { value_.fetch_add(d, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

/// How a gauge's values from a node's processes combine (node_metrics.h): most are each
/// process's share of a whole (bytes in flight: the sum); some are a setting each process has
/// (the cache_limit, the parts a download comes in: the largest, not a sum of eight ranks').
enum class AcrossProcesses { kSum, kLargest };

/// The counter or gauge registered under `name`, created on first use. A name is either a
/// counter or a gauge for the life of the process; a gauge's `across` is its first caller's.
Counter& GetCounter(std::string_view name);
Gauge& GetGauge(std::string_view name, AcrossProcesses across = AcrossProcesses::kSum);

struct Metric {
  std::string name;
  bool gauge = false;  // else a counter
  int64_t value = 0;
  AcrossProcesses across = AcrossProcesses::kSum;  // a gauge's
};

/// Every metric, ordered by name.
std::vector<Metric> All();

/// Every metric's current value, by name.
std::map<std::string, int64_t> Values();

/// `name`'s value in `values`, 0 when absent (a metric nobody bumped yet).
int64_t ValueOr0(const std::map<std::string, int64_t>& values, std::string_view name);

/// A store's metric, "/ferry/storage/<scheme>/<what>", split; nullopt for any other name.
struct StoreMetricName {
  std::string_view scheme;
  std::string_view what;
};
std::optional<StoreMetricName> SplitStoreMetric(std::string_view name);

/// The sum of "/ferry/storage/<scheme>/<what>" over every store in `values`: what all the
/// stores did together ("bytes_read", "requests", "in_flight").
int64_t StoreTotal(const std::map<std::string, int64_t>& values, std::string_view what);

/// Values() as one JSON object: {"/ferry/cache/hits": 12, ...}.
std::string SnapshotJson();

}  // namespace ferry::metrics
