#include "cli/top_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/human_size.h"
#include "ferry/metrics/metrics.h"

namespace ferry::cli {
namespace {

using Values = std::map<std::string, int64_t>;

constexpr std::string_view kStoragePrefix = "/ferry/storage/";

struct WaitCause {
  std::string_view metric;
  std::string_view column;
  std::string_view json;
};
// Why a reader waited: for a shard to be readable (the iterator's wait); in the cache on a miss
// (downloading, or waiting for another process's download of the shard); for a node download
// slot (part of the cache's); for a file of a FileDataset.
constexpr WaitCause kWaits[] = {
    {"/ferry/stream/wait_ns", "shard", "shard"},
    {"/ferry/cache/wait_ns", "fetch", "fetch"},
    {"/ferry/cache/slot_wait_ns", "slot", "slot"},
    {"/ferry/files/wait_ns", "file", "file"},
};

int64_t Get(const Values& v, std::string_view name) { return metrics::ValueOr0(v, name); }

// The stores' schemes named by /ferry/storage/<scheme>/... metrics.
std::set<std::string> Schemes(const Values& v) {
  std::set<std::string> out;
  for (const auto& [name, value] : v) {
    if (auto store = metrics::SplitStoreMetric(name)) out.insert(std::string(store->scheme));
  }
  return out;
}

struct Rates {
  double samples = 0;
  std::map<std::string, double> read_bytes;  // per scheme
  double requests = 0;
  std::map<std::string_view, double> waits;  // per cause's column, seconds per second
};

Rates RatesBetween(const Values& now, const Values& before, double dt,
                   const std::set<std::string>& schemes) {
  Rates r;
  const auto delta = [&](std::string_view name) {
    return static_cast<double>(std::max<int64_t>(0, Get(now, name) - Get(before, name))) / dt;
  };
  r.samples = delta("/ferry/stream/samples");
  for (const std::string& scheme : schemes) {
    r.read_bytes[scheme] = delta(fmt::format("{}{}/bytes_read", kStoragePrefix, scheme));
  }
  r.requests = std::max<double>(0, metrics::StoreTotal(now, "requests") -
                                       metrics::StoreTotal(before, "requests")) /
               dt;
  for (const WaitCause& w : kWaits) r.waits[w.column] = delta(w.metric) / 1e9;
  return r;
}

struct Row {
  std::string name;
  const Values* now = nullptr;
  const Values* before = nullptr;  // null: no rates
};

std::vector<Row> Rows(const TopFrame& frame) {
  std::vector<Row> rows;
  std::map<std::pair<int64_t, int64_t>, const Values*> before;
  if (frame.before) {
    for (const metrics::ProcessMetrics& p : frame.before->node.processes) {
      before[{p.pid, p.started_unix_ms}] = &p.values;
    }
  }
  std::vector<const metrics::ProcessMetrics*> processes;
  for (const metrics::ProcessMetrics& p : frame.now.node.processes) processes.push_back(&p);
  std::sort(processes.begin(), processes.end(), [](auto* a, auto* b) { return a->pid < b->pid; });
  for (const metrics::ProcessMetrics* p : processes) {
    auto it = before.find({p->pid, p->started_unix_ms});
    rows.push_back({.name = fmt::format("{:>7} {}", p->pid, p->label),
                    .now = &p->values,
                    .before = it == before.end() ? nullptr : it->second});
  }
  rows.push_back({.name = "node",
                  .now = &frame.now.node.values,
                  .before = frame.before ? &frame.before->node.values : nullptr});
  return rows;
}

// The node's is the largest of its readers' (metrics::AcrossProcesses::kLargest).
int64_t CacheLimit(const metrics::NodeMetrics& node) {
  return Get(node.values, "/ferry/cache/limit_bytes");
}

std::string Mb(double bytes_per_s) { return fmt::format("{:.1f}", bytes_per_s / 1e6); }

}  // namespace

std::vector<std::string> RenderTop(const TopFrame& frame, size_t width) {
  const metrics::NodeMetrics& node = frame.now.node;
  const Values& total = node.values;
  const std::set<std::string> schemes = Schemes(total);
  const double dt = frame.before ? frame.now.at_s - frame.before->at_s : 0;
  std::vector<std::string> lines;
  const int64_t limit = CacheLimit(node);
  lines.push_back(fmt::format("ferry top  {}  ({} {} reading)", frame.folder, node.processes.size(),
                              node.processes.size() == 1 ? "process" : "processes"));
  lines.push_back(
      fmt::format("cache {} {}  hits {}  misses {}  downloads {}  evictions {}  downloaded {}",
                  FormatBytes(frame.now.cache_bytes),
                  limit > 0 ? "of " + FormatBytes(limit) : std::string("(no limit)"),
                  Get(total, "/ferry/cache/hits"), Get(total, "/ferry/cache/misses"),
                  Get(total, "/ferry/cache/downloads"), Get(total, "/ferry/cache/evictions"),
                  FormatBytes(Get(total, "/ferry/cache/downloaded_bytes"))));
  lines.emplace_back();
  std::string header = fmt::format("{:<30} {:>9}", "PROCESS", "samples/s");
  for (const std::string& scheme : schemes) header += fmt::format(" {:>9}", scheme + " MB/s");
  header += fmt::format(" {:>6} {:>8} {:>9}", "req/s", "in flight", "MB ahead");
  header += "  waiting (s/s):";
  for (const WaitCause& w : kWaits) header += fmt::format(" {:>5}", w.column);
  lines.push_back(header);
  for (const Row& row : Rows(frame)) {
    std::string line = fmt::format("{:<30.30}", row.name);
    const bool rates = row.before != nullptr && dt > 0;
    const Rates r = rates ? RatesBetween(*row.now, *row.before, dt, schemes) : Rates{};
    line += fmt::format(" {:>9}", rates ? fmt::format("{:.0f}", r.samples) : "-");
    for (const std::string& scheme : schemes) {
      line += fmt::format(" {:>9}", rates ? Mb(r.read_bytes.at(scheme)) : "-");
    }
    line += fmt::format(" {:>6}", rates ? fmt::format("{:.0f}", r.requests) : "-");
    line += fmt::format(" {:>8}", metrics::StoreTotal(*row.now, "in_flight"));
    line += fmt::format(" {:>9}",
                        Mb(static_cast<double>(Get(*row.now, "/ferry/stream/bytes_in_flight"))));
    line += std::string(16, ' ');
    for (const WaitCause& w : kWaits) {
      line += fmt::format(" {:>5}", rates ? fmt::format("{:.2f}", r.waits.at(w.column)) : "-");
    }
    lines.push_back(std::move(line));
  }
  for (std::string& line : lines) {
    if (line.size() > width) line.resize(width);
  }
  return lines;
}

nlohmann::ordered_json TopJson(const TopFrame& frame) {
  const metrics::NodeMetrics& node = frame.now.node;
  const std::set<std::string> schemes = Schemes(node.values);
  const double dt = frame.before ? frame.now.at_s - frame.before->at_s : 0;
  const auto row_json = [&](const Row& row) {
    nlohmann::ordered_json j;
    j["values"] = *row.now;
    if (row.before != nullptr && dt > 0) {
      const Rates r = RatesBetween(*row.now, *row.before, dt, schemes);
      nlohmann::ordered_json rates;
      rates["samples_per_s"] = r.samples;
      rates["read_bytes_per_s"] = r.read_bytes;
      rates["requests_per_s"] = r.requests;
      nlohmann::ordered_json waits;
      for (const WaitCause& w : kWaits) waits[std::string(w.json)] = r.waits.at(w.column);
      rates["waiting_s_per_s"] = std::move(waits);
      j["rates"] = std::move(rates);
    }
    return j;
  };
  nlohmann::ordered_json out;
  out["folder"] = frame.folder;
  const int64_t limit = CacheLimit(node);
  out["cache"] = {{"bytes", frame.now.cache_bytes},
                  {"limit", limit > 0 ? nlohmann::ordered_json(limit) : nullptr}};
  nlohmann::ordered_json processes = nlohmann::ordered_json::array();
  std::vector<Row> rows = Rows(frame);
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    const metrics::ProcessMetrics* p = nullptr;
    for (const metrics::ProcessMetrics& candidate : node.processes) {
      if (&candidate.values == rows[i].now) p = &candidate;
    }
    nlohmann::ordered_json j;
    j["pid"] = p->pid;
    j["label"] = p->label;
    j.update(row_json(rows[i]));
    processes.push_back(std::move(j));
  }
  out["node"] = row_json(rows.back());
  out["node"]["exited"] = node.exited;
  out["processes"] = std::move(processes);
  return out;
}

}  // namespace ferry::cli
