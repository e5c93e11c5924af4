// A one-line progress display on stderr: done/total, rate in items/s and MB/s, and ETA.
//
// It draws only when stderr is a terminal (so logs and pipes stay clean) and at most ~5 times a
// second, whatever the update rate.
//
// Thread-safety: Update may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

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
  void Draw(bool final);

  const std::string label_;
  const std::string unit_;
  const uint64_t total_;
  const bool enabled_;
  const std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_draw_;
  uint64_t items_ = 0;
  uint64_t bytes_ = 0;
  bool finished_ = false;
};

}  // namespace ferry
