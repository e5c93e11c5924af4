// InFlightCounter: how many of something are in progress at once, and the most seen - the count
// that tests of concurrency limits assert on. Plain atomics, so it also works in memory that
// forked children share (placement-new it into a MAP_SHARED mapping).
//
// Thread-safety: every member may be used from any thread (or process, as above).
#pragma once

#include <atomic>

namespace ferry::testing {

struct InFlightCounter {
  std::atomic<int> now{0};
  std::atomic<int> most{0};

  /// One more in progress; raises `most` to the new count if it is higher.
  void Enter() {
    const int count = ++now;
    int seen = most.load();
    while (count > seen && !most.compare_exchange_weak(seen, count)) {
    }
  }
  void Leave() { --now; }
};

}  // namespace ferry::testing
