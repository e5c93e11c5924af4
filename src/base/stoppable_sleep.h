// SleepUnlessStopped: a sleep that a stop request cuts short (a backoff between retries, a nap
// between polls of a lock), so that whoever waits for the sleeper's thread is not kept waiting.
//
// Thread-safety: free function.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

namespace ferry {

/// Sleeps for `duration`, or until `stop` is requested. False when the stop ended it.
template <typename Rep, typename Period>
bool SleepUnlessStopped(std::chrono::duration<Rep, Period> duration, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, stop, duration, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace ferry
