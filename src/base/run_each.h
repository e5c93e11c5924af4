// RunEach: a task for every index of a range, on a few threads at once.
//
// Calls task(i) once for every i in [0, count), on at most `threads` threads (std::jthread), and
// returns when every call has returned; with one thread, or one index, on the caller's thread.
// Indexes are handed out in order, so the first ones start first. A task that should stop the
// rest checks a stop_source of the caller's and returns at once.
//
// Thread-safety: `task` is called concurrently, each index once.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace ferry {

inline void RunEach(size_t count, size_t threads, const std::function<void(size_t)>& task) {
  threads = std::min(std::max<size_t>(threads, 1), count);
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) task(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::jthread> workers;
  workers.reserve(threads);
  for (size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < count; i = next++) task(i);
    });
  }
}

}  // namespace ferry
