// A one-line progress display on stderr: done/total, rate in items/s and MB/s, and ETA.
//
// On a terminal it redraws its line in place at most ~5 times a second, whatever the update
// rate. Elsewhere (a log, a pipe, a batch job) it prints one full line per interval - every 10 s,
// FERRY_PROGRESS_INTERVAL seconds if set - so that a long job's log says how far it got without
// a line per item; nothing for a command done within the first interval.
//
// Thread-safety: Update may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/mutex.h"

namespace ferry {

class ProgressBar {
 public:
  /// `unit` names the items ("files", "shards"); total_items may be 0 when unknown.
  ProgressBar(std::string label, std::string unit, uint64_t total_items, bool enabled);
  ~ProgressBar();

  void Update(uint64_t items_done, uint64_t bytes_done);
  /// Draws the final state and ends the line.
  void Finish();

  /// True when stderr is a terminal.
  static bool StderrIsTerminal();

 private:
  void Draw(bool final) REQUIRES(mu_);

  const std::string label_;
  const std::string unit_;
  const uint64_t total_;
  const bool enabled_;
  const bool terminal_;
  const std::chrono::steady_clock::duration interval_;  // between lines off a terminal
  const std::chrono::steady_clock::time_point start_;
  Mutex mu_;
  std::chrono::steady_clock::time_point last_draw_ GUARDED_BY(mu_);
  uint64_t items_ GUARDED_BY(mu_) = 0;
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
  bool finished_ GUARDED_BY(mu_) = false;
};

}  // namespace ferry
