// SourceHealth: which of several places that serve the same bytes (a dataset's mirrors, the
// nodes of a cluster cache) to pass over for now, because they failed.
//
// A source that fails is demoted: passed over for `demote_for`, doubling with each failure in a
// row up to `max_demotion`. Once its demotion ends, the next read that goes to it is the probe:
// a success ends the demotion, a failure doubles it. A failure of a read that began while the
// source was demoted already changes nothing (it tells nothing new), and a success of a read
// that began before the demotion does not end it.
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "base/mutex.h"

namespace ferry {

struct DemotionOptions {
  /// How long a source is passed over after a failure; doubles with each failure in a row.
  std::chrono::milliseconds demote_for{5000};
  std::chrono::milliseconds max_demotion{300'000};
};

class SourceHealth {
 public:
  using Clock = std::chrono::steady_clock;

  SourceHealth(size_t sources, DemotionOptions options) : options_(options), health_(sources) {}

  /// When each source's demotion ends (a time in the past for one that is not demoted).
  std::vector<Clock::time_point> DemotedUntil() const {
    MutexLock lock(mu_);
    std::vector<Clock::time_point> until;
    until.reserve(health_.size());
    for (const Health& h : health_) until.push_back(h.demoted_until);
    return until;
  }

  bool Demoted(size_t i, Clock::time_point now = Clock::now()) const {
    MutexLock lock(mu_);
    return health_[i].demoted_until > now;
  }

  /// Whether source `i` was demoted after `started` (by another read's failure).
  bool DemotedSince(size_t i, Clock::time_point started) const {
    MutexLock lock(mu_);
    return health_[i].demoted_at > started;
  }

  /// A read of source `i` that began at `started` succeeded.
  void Succeeded(size_t i, Clock::time_point started) {
    MutexLock lock(mu_);
    if (started >= health_[i].demoted_at) health_[i] = {};
  }

  /// Source `i` failed; returns how long it is passed over.
  std::chrono::milliseconds Demote(size_t i) {
    const Clock::time_point now = Clock::now();
    MutexLock lock(mu_);
    Health& health = health_[i];
    if (health.demoted_until > now) return health.last_demotion;
    health.last_demotion = health.last_demotion.count() == 0
                               ? options_.demote_for
                               : std::min(options_.max_demotion, 2 * health.last_demotion);
    health.demoted_at = now;
    health.demoted_until = now + health.last_demotion;
    return health.last_demotion;
  }

 private:
  struct Health {
    Clock::time_point demoted_at{};
    Clock::time_point demoted_until{};
    std::chrono::milliseconds last_demotion{0};
  };

  const DemotionOptions options_;
  mutable Mutex mu_;
  std::vector<Health> health_ GUARDED_BY(mu_);
};

}  // namespace ferry
