// MetricsFile: one process's counters and gauges in a small file that other processes map and
// read while it is written - how a node's processes (DataLoader workers, ranks, other jobs) see
// each other's figures without a server or shared memory outside the cache folder.
//
// Layout (8 KiB, host byte order: only processes of one node read it):
//   0    char[8]  magic "FRYMET01"
//   8    u32      entry size (64)         12  u32 capacity (entries)
//   16   i64      pid                     24  i64 started, unix ms
//   32   u64      count (entries written) 40  i64 updated, unix ms
//   48   char[80] label, NUL-padded (who the process is: "python3 worker 1/2")
//   128  entries: char[48] name, NUL-padded; u8 kind at 48 (0 counter, 1 gauge summed across
//        processes, 2 gauge whose largest counts: metrics::AcrossProcesses); i64 value at 56
// Entries are append-only: a name, once published (count raised with release order), never
// changes, and each value is one aligned word written atomically. A reader needs no lock and
// sees every value whole; it may see one update's values from two moments, which a reader of
// counters cannot tell from reading a moment later.
//
// The writer holds an exclusive flock on its file for as long as it lives: a reader that can
// take the lock knows the writer is gone (flocks vanish with their process).
//
// Thread-safety: a MetricsFileWriter is owned by one thread at a time; ReadMetricsFile may run
// anywhere, concurrently with the writer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ferry/metrics/metrics.h"
#include "ferry/result.h"

namespace ferry::metrics {

// Small, as it counts against a cache_limit: 126 entries.
inline constexpr size_t kMetricsFileSize = 8 << 10;
/// A name longer than this is not published (none of ferry's is).
inline constexpr size_t kMetricsFileMaxName = 47;

class MetricsFileWriter {
 public:
  /// Creates a file of this process's under `folder` (which must exist), locked, under a name
  /// starting "proc." (never one a reader could see half made).
  static Result<MetricsFileWriter> Create(const std::filesystem::path& folder,
                                          std::string_view label, unsigned mode = 0600);

  MetricsFileWriter() = default;
  MetricsFileWriter(MetricsFileWriter&& other) noexcept;
  MetricsFileWriter& operator=(MetricsFileWriter&& other) noexcept;
  ~MetricsFileWriter() { Close(); }

  const std::filesystem::path& path() const { return path_; }

  /// Writes `values` (each a metric's current value, less `base` for counters).
  void Publish(const std::vector<Metric>& values, const std::map<std::string, int64_t>& base);

  /// Unmaps and closes without unlocking - in a fork()ed child, whose descriptor is a copy of the
  /// parent's, the parent keeps its lock.
  void Abandon();
  /// Unlocks, unmaps and closes (the file stays).
  void Close();

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  char* map_ = nullptr;
  uint64_t count_ = 0;
  std::map<std::string, size_t, std::less<>> slots_;
};

struct MetricsFileContents {
  int64_t pid = 0;
  std::string label;
  int64_t started_unix_ms = 0;
  int64_t updated_unix_ms = 0;
  std::map<std::string, int64_t> counters;
  std::map<std::string, int64_t> gauges;
  std::set<std::string> largest;  // the gauges whose node-wide value is the largest, not the sum
};

/// What the open file `fd` (named `path` in errors) holds. kDataLoss for one that is not a
/// metrics file or is cut short.
Result<MetricsFileContents> ReadMetricsFile(int fd, const std::filesystem::path& path);

}  // namespace ferry::metrics
