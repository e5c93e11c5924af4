// StreamReport: `ferry stream --report run.html` - while the epochs run, a thread samples the
// process's counters four times a second (bytes read from the stores, bytes in flight, the
// cache's fill, samples); at the end the epochs' figures and the samples go to ferry's Python
// package (ferry/_report.py, the page ferry.diagnose writes), which draws the plots with
// matplotlib into one self-contained HTML page.
//
// The package is looked for beside the binary (ferry/bin/ferry in a wheel; the build tree's
// python/ folder), then on the interpreter's own path; the interpreter is $FERRY_PYTHON, else
// /usr/bin/python3, else python3 on PATH.
//
// Thread-safety: AddEpoch and Write from the thread that made it; the sampler is its own.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "ferry/result.h"

namespace ferry::cli {

class StreamReport {
 public:
  explicit StreamReport(std::string url);
  ~StreamReport();
  StreamReport(const StreamReport&) = delete;
  StreamReport& operator=(const StreamReport&) = delete;

  /// One epoch's figures, as `ferry stream --json` prints them.
  void AddEpoch(nlohmann::ordered_json epoch);
  /// Stops sampling and writes the page to `path` (through a temporary: never half a page).
  Status Write(const std::string& path);

 private:
  void Sample() EXCLUDES(mu_);

  const std::string url_;
  const std::chrono::steady_clock::time_point start_;
  std::vector<nlohmann::ordered_json> epochs_;
  Mutex mu_;
  nlohmann::ordered_json series_ GUARDED_BY(mu_);
  std::jthread sampler_;
};

}  // namespace ferry::cli
