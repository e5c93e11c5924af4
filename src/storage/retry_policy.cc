#include "storage/retry_policy.h"

#include <algorithm>

namespace ferry {

std::chrono::milliseconds BackoffForAttempt(const RetryPolicy& policy, int attempt,
                                            double unit_random) {
  if (attempt < 1) attempt = 1;
  // initial * 2^(attempt-1), saturating well before overflow.
  const int shift = std::min(attempt - 1, 30);
  const auto ceiling = std::min<int64_t>(policy.max_backoff.count(),
                                         policy.initial_backoff.count() * (int64_t{1} << shift));
  const double r = std::clamp(unit_random, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(ceiling) * r));
}

namespace {
thread_local RetryGiveUpScope* innermost = nullptr;
}  // namespace

RetryGiveUpScope::RetryGiveUpScope(GiveUp give_up)
    : give_up_(std::move(give_up)), outer_(innermost) {
  innermost = this;
}

RetryGiveUpScope::~RetryGiveUpScope() { innermost = outer_; }

bool RetryGiveUpScope::ShouldGiveUp(int attempts, const Status& failure) {
  return innermost != nullptr && innermost->give_up_(attempts, failure);
}

double UnitRandom() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace ferry
