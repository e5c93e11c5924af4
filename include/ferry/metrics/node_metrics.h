// Node-wide metrics: every process that reads a cache folder publishes its counters and gauges
// (metrics.h) in a file of its own under the folder's metrics folder (<local>/.ferry/metrics),
// and any process sums them - what `ferry.metrics(local=...)`, `ferry top` and the Prometheus
// endpoint show. So a DataLoader's workers, a job's ranks on one node and other jobs sharing the
// folder are seen together: /ferry/cache/downloaded_bytes is every byte downloaded into it.
//
// A process publishes while it holds a NodePublication (the shard cache takes one per folder it
// downloads into): a thread rewrites its file every 100 ms, and once more at release and at
// exit() (and, from Python, when a multiprocessing worker exits). When the last publication of a
// folder is released, the process folds its counters into the folder's totals (totals.json)
// and removes its file. A process that dies without that (killed, os._exit) leaves its file
// unlocked; the next reader folds its counters into the totals - they survive the process, up
// to the last 100 ms - and drops its gauges. A process's counters count in a folder from the
// moment it begins publishing there (a torch worker's since it opened the dataset: a forked child
// starts from zero); a process that reads two cache folders at once publishes its counts in both.
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry::metrics {

/// The file in a metrics folder that holds what exited processes counted (beside their
/// "proc.*" files).
inline constexpr std::string_view kNodeTotalsFile = "totals.json";

struct ProcessMetrics {
  int64_t pid = 0;
  std::string label;
  int64_t started_unix_ms = 0;
  int64_t updated_unix_ms = 0;
  std::map<std::string, int64_t> values;  // counters and gauges
};

struct NodeMetrics {
  /// Counters: the live processes' plus every exited one's. Gauges: the live processes' sum -
  /// or their largest value, for a gauge that is a setting (metrics::AcrossProcesses).
  std::map<std::string, int64_t> values;
  /// The processes publishing now.
  std::vector<ProcessMetrics> processes;
  /// What exited processes counted, all together.
  std::map<std::string, int64_t> exited;
  /// The names in `values` that are gauges (the rest are counters).
  std::set<std::string> gauges;
};

/// The sum over the processes publishing to the metrics folder `folder`; folds the counters of
/// processes that died into its totals (when the folder is writable; files it creates get
/// `file_mode`). A folder that does not exist has no processes and no totals.
Result<NodeMetrics> ReadNodeMetrics(const std::filesystem::path& folder, unsigned file_mode = 0600);

/// This process publishing to the metrics folder `folder` (created if missing) until the last
/// copy for that folder is destroyed. `file_mode`: who may read the file (other users' readers
/// of a shared folder need to).
class NodePublication {
 public:
  static Result<NodePublication> Start(const std::filesystem::path& folder,
                                       unsigned file_mode = 0600);

  NodePublication() = default;
  NodePublication(NodePublication&& other) noexcept;
  NodePublication& operator=(NodePublication&& other) noexcept;
  ~NodePublication() { Release(); }

  bool active() const { return !folder_.empty(); }

 private:
  NodePublication(std::filesystem::path folder, int64_t pid)
      : folder_(std::move(folder)), pid_(pid) {}
  void Release();

  std::filesystem::path folder_;
  int64_t pid_ = 0;  // the process that started it
};

/// Writes this process's current values into every file it publishes now (the thread does so
/// every 100 ms; this is for the moment before a process exits).
void FlushNodeMetrics();

/// Who this process is, shown by `ferry top` after the program's name ("python3 worker 1/2");
/// applies to files created after.
void SetProcessLabel(std::string label);

}  // namespace ferry::metrics
