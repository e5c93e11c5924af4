#include "ferry/metrics/metrics.h"

#include <algorithm>
#include <deque>
#include <nlohmann/json.hpp>

#include "base/fork_guard.h"
#include "base/mutex.h"
#include "base/python_json.h"

namespace ferry::metrics {

class ForkReset {
 public:
  static void Zero(Counter& c) { c.Reset(); }
};

namespace {

struct Registry {
  Mutex mu;
  // deques: elements never move, so references handed out stay valid.
  std::deque<Counter> counters GUARDED_BY(mu);
  std::deque<Gauge> gauges GUARDED_BY(mu);
  std::map<std::string, Counter*, std::less<>> counter_names GUARDED_BY(mu);
  std::map<std::string, Gauge*, std::less<>> gauge_names GUARDED_BY(mu);
  std::map<const Gauge*, AcrossProcesses> gauge_across GUARDED_BY(mu);
};

// A forked child zeroes what it inherited (base/fork_guard.h holds the lock across the fork).
void ZeroInChild();

Registry& TheRegistry() {
  static auto* registry = [] {
    auto* r = new Registry();  // never destroyed: metrics outlive every user
    LockAcrossFork(r->mu, ZeroInChild);
    return r;
  }();
  return *registry;
}

void ZeroInChild() NO_THREAD_SAFETY_ANALYSIS {
  Registry& r = TheRegistry();
  for (Counter& c : r.counters) ForkReset::Zero(c);
  for (Gauge& g : r.gauges) g.Set(0);
}

}  // namespace

Counter& GetCounter(std::string_view name) {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  if (auto it = r.counter_names.find(name); it != r.counter_names.end()) return *it->second;
  Counter* c = &r.counters.emplace_back();
  r.counter_names.emplace(std::string(name), c);
  return *c;
}

Gauge& GetGauge(std::string_view name, AcrossProcesses across) {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  if (auto it = r.gauge_names.find(name); it != r.gauge_names.end()) return *it->second;
  Gauge* g = &r.gauges.emplace_back();
  r.gauge_names.emplace(std::string(name), g);
  r.gauge_across.emplace(g, across);
  return *g;
}

std::vector<Metric> All() {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  std::vector<Metric> out;
  out.reserve(r.counter_names.size() + r.gauge_names.size());
  for (const auto& [name, c] : r.counter_names) {
    out.push_back({.name = name, .gauge = false, .value = static_cast<int64_t>(c->value())});
  }
  for (const auto& [name, g] : r.gauge_names) {
    out.push_back(
        {.name = name, .gauge = true, .value = g->value(), .across = r.gauge_across.at(g)});
  }
  std::sort(out.begin(), out.end(),
            [](const Metric& a, const Metric& b) { return a.name < b.name; });
  return out;
}

std::map<std::string, int64_t> Values() {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  std::map<std::string, int64_t> out;
  for (const auto& [name, c] : r.counter_names) out[name] = static_cast<int64_t>(c->value());
  for (const auto& [name, g] : r.gauge_names) out[name] = g->value();
  return out;
}

int64_t ValueOr0(const std::map<std::string, int64_t>& values, std::string_view name) {
  auto it = values.find(std::string(name));
  return it == values.end() ? 0 : it->second;
}

std::optional<StoreMetricName> SplitStoreMetric(std::string_view name) {
  constexpr std::string_view kPrefix = "/ferry/storage/";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  const std::string_view rest = name.substr(kPrefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return StoreMetricName{.scheme = rest.substr(0, slash), .what = rest.substr(slash + 1)};
}

int64_t StoreTotal(const std::map<std::string, int64_t>& values, std::string_view what) {
  int64_t n = 0;
  for (const auto& [name, value] : values) {
    if (auto store = SplitStoreMetric(name); store && store->what == what) n += value;
  }
  return n;
}

std::string SnapshotJson() {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, v] : Values()) j[name] = v;
  return DumpPythonJson(j, JsonKeyOrder::kInsertion);
}

}  // namespace ferry::metrics
