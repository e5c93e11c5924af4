// SourceSpeeds: how fast each of several places that serve the same bytes (a dataset's
// mirrors) has delivered lately, so that reads prefer a fast one over a slow one ahead of it.
//
// A read of at least kMinMeasuredBytes from one source is a measurement (bytes over the read's
// time, kept as a moving average). A source measured at less than half the speed of one behind
// it in preference order moves behind that one: preference decides between sources of about
// the same speed, measurements between very different ones. Only a source whose last measured
// read took kMinSlowRead or more can count as slow: the rate of a read of a millisecond is
// noise, and two equal sources timed so would swap places at random. Every kProbeEvery-th read is a
// probe of the first source after the chosen one whose measurement is missing or older than
// kStale (and that the caller allows: one it pays no more for), so that a slow source that
// recovered, or one never tried, gets measured.
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "base/mutex.h"

namespace ferry {

class SourceSpeeds {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint64_t kMinMeasuredBytes = uint64_t{256} << 10;
  static constexpr uint64_t kProbeEvery = 16;
  static constexpr std::chrono::seconds kStale{30};
  static constexpr std::chrono::milliseconds kMinSlowRead{20};

  explicit SourceSpeeds(size_t sources) : speeds_(sources) {}

  /// A read of `bytes` from source `i` took `took` (reads under kMinMeasuredBytes say little
  /// and are not counted).
  void Record(size_t i, uint64_t bytes, std::chrono::nanoseconds took) {
    if (bytes < kMinMeasuredBytes || took.count() <= 0) return;
    const double rate = static_cast<double>(bytes) / std::chrono::duration<double>(took).count();
    MutexLock lock(mu_);
    Speed& speed = speeds_[i];
    speed.bytes_per_s =
        speed.measured_at == Clock::time_point{} ? rate : 0.7 * speed.bytes_per_s + 0.3 * rate;
    speed.measured_at = Clock::now();
    speed.last_took = took;
  }

  /// Reorders `sources` (in preference order): one measured at less than half the speed of a
  /// later one, on a read of at least kMinSlowRead, moves just behind it.
  void Reorder(std::vector<size_t>& sources) const {
    std::vector<double> rate;
    std::vector<bool> may_be_slow;
    {
      MutexLock lock(mu_);
      rate.assign(speeds_.size(), 0);
      may_be_slow.assign(speeds_.size(), false);
      for (size_t i = 0; i < speeds_.size(); ++i) {
        if (speeds_[i].measured_at == Clock::time_point{}) continue;
        rate[i] = speeds_[i].bytes_per_s;
        may_be_slow[i] = speeds_[i].last_took >= kMinSlowRead;
      }
    }
    // Insertion from the back: each source settles behind every later one more than twice as
    // fast, and before the rest, which keeps preference order among sources of like speed.
    std::vector<size_t> out;
    for (auto it = sources.rbegin(); it != sources.rend(); ++it) {
      size_t at = 0;
      for (size_t j = 0; j < out.size(); ++j) {
        if (may_be_slow[*it] && rate[*it] > 0 && rate[out[j]] > 2 * rate[*it]) at = j + 1;
      }
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), *it);
    }
    sources = std::move(out);
  }

  /// The source this read should probe instead of `sources.front()`, if it is a probe's turn
  /// and one of the others (that `may_probe` allows) is unmeasured or measured long ago.
  std::optional<size_t> Probe(const std::vector<size_t>& sources,
                              const std::function<bool(size_t)>& may_probe) {
    if (sources.size() < 2 || reads_.fetch_add(1, std::memory_order_relaxed) % kProbeEvery != 0) {
      return std::nullopt;
    }
    const Clock::time_point now = Clock::now();
    MutexLock lock(mu_);
    for (size_t n = 1; n < sources.size(); ++n) {
      const Speed& speed = speeds_[sources[n]];
      if ((speed.measured_at == Clock::time_point{} || now - speed.measured_at > kStale) &&
          may_probe(sources[n])) {
        return sources[n];
      }
    }
    return std::nullopt;
  }

 private:
  struct Speed {
    double bytes_per_s = 0;
    Clock::time_point measured_at{};
    std::chrono::nanoseconds last_took{0};
  };
  mutable Mutex mu_;
  std::vector<Speed> speeds_ GUARDED_BY(mu_);
  std::atomic<uint64_t> reads_{1};  // the first read is not a probe
};

}  // namespace ferry
