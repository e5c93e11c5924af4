// Retrying transient failures: exponential backoff with full jitter, bounded by a number of
// attempts and by total time. Whether to retry is decided from the Status code alone
// (IsRetryable: kUnavailable, kDeadlineExceeded, kAborted).
//
// BackoffForAttempt is pure (the random draw is a parameter), so it is tested without clocks.
//
// Thread-safety: RetryPolicy is a value; Retry may run on many threads at once.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <random>
#include <stop_token>
#include <type_traits>

#include "base/log.h"
#include "base/stoppable_sleep.h"
#include "ferry/result.h"

namespace ferry {

struct RetryPolicy {
  int max_attempts = 8;  // total tries, the first included
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{8'000};
  std::chrono::milliseconds total_budget{120'000};  // no new attempt starts after this
};

/// The wait before retry number `attempt` (1 = the first retry): uniform in
/// [0, min(max_backoff, initial_backoff * 2^(attempt-1))), drawn with `unit_random` in [0, 1).
std::chrono::milliseconds BackoffForAttempt(const RetryPolicy& policy, int attempt,
                                            double unit_random);

/// A uniform draw in [0, 1) from a per-thread generator.
double UnitRandom();

/// While one lives, Retry on this thread asks it, after each failed attempt that it would
/// retry, whether to give up instead, and returns that failure at once when it says so: for a
/// caller with somewhere better to go (MirrorStore, when another mirror can take the read over).
/// Scopes nest; the innermost one decides.
class RetryGiveUpScope {
 public:
  using GiveUp = std::function<bool(int attempts, const Status& failure)>;
  explicit RetryGiveUpScope(GiveUp give_up);
  ~RetryGiveUpScope();
  RetryGiveUpScope(const RetryGiveUpScope&) = delete;
  RetryGiveUpScope& operator=(const RetryGiveUpScope&) = delete;

  /// The innermost scope's answer on this thread; false without one.
  static bool ShouldGiveUp(int attempts, const Status& failure);

 private:
  GiveUp give_up_;
  RetryGiveUpScope* outer_;
};

namespace internal_retry {
inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}
}  // namespace internal_retry

/// Runs `attempt()` (returning Status or Result<T>) until it succeeds, fails with a code that is
/// not retryable, or the policy's attempts or time are spent. The final error says how many
/// attempts were made. A stop request ends the waiting with kCancelled.
template <typename F>
auto Retry(const RetryPolicy& policy, F&& attempt, std::stop_token stop = {})
    -> std::invoke_result_t<F&> {
  const auto start = std::chrono::steady_clock::now();
  for (int n = 1;; ++n) {
    auto result = attempt();
    const Status status = internal_retry::StatusOf(result);
    if (status.ok() || !IsRetryable(status.code())) return result;
    const auto elapsed = std::chrono::steady_clock::now() - start;
    const auto wait = BackoffForAttempt(policy, n, UnitRandom());
    if (n >= policy.max_attempts || elapsed + wait > policy.total_budget ||
        RetryGiveUpScope::ShouldGiveUp(n, status)) {
      return status.WithContext(fmt::format("gave up after {} attempts in {:.1f} s", n,
                                            std::chrono::duration<double>(elapsed).count()));
    }
    Log().info("retrying in {} ms after attempt {}: {}", wait.count(), n, status.ToString());
    if (!SleepUnlessStopped(wait, stop)) {
      return CancelledError("stopped while waiting to retry: " + status.message());
    }
  }
}

}  // namespace ferry
