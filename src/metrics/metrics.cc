#include "ferry/metrics/metrics.h"

#include <deque>
#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "base/python_json.h"

namespace ferry::metrics {
namespace {

struct Registry {
  Mutex mu;
  // deques: elements never move, so references handed out stay valid.
  std::deque<Counter> counters GUARDED_BY(mu);
  std::deque<Gauge> gauges GUARDED_BY(mu);
  std::map<std::string, Counter*, std::less<>> counter_names GUARDED_BY(mu);
  std::map<std::string, Gauge*, std::less<>> gauge_names GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static auto* registry = new Registry();  // never destroyed: metrics outlive every user
  return *registry;
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

Gauge& GetGauge(std::string_view name) {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  if (auto it = r.gauge_names.find(name); it != r.gauge_names.end()) return *it->second;
  Gauge* g = &r.gauges.emplace_back();
  r.gauge_names.emplace(std::string(name), g);
  return *g;
}

std::map<std::string, int64_t> Values() {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  std::map<std::string, int64_t> out;
  for (const auto& [name, c] : r.counter_names) out[name] = static_cast<int64_t>(c->value());
  for (const auto& [name, g] : r.gauge_names) out[name] = g->value();
  return out;
}

std::string SnapshotJson() {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, v] : Values()) j[name] = v;
  return DumpPythonJson(j, JsonKeyOrder::kInsertion);
}

}  // namespace ferry::metrics
