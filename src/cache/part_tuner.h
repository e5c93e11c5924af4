// PartTuner: chooses how many ranged parts a large shard is downloaded as, from the rates the
// downloads themselves reach.
//
// More parts help only where each connection gets a fraction of the link (a cross-cloud TCP
// stream capped well below the link); where one connection can carry the link, they add requests
// and connections that cost CPU on both ends (measured: 10 % slower at RTT 100 ms on the
// emulator, and 2x faster under a 25 MB/s-per-connection cap - docs/benchmarks.md). Which case
// holds shows in how one body's rate responds to the number of bodies arriving at the same time:
//   rate ~ k^-1  the connections share one limit: more of them only split it  -> fewer parts
//   rate ~ k^0   each connection has its own limit: more of them add up       -> more parts
// So every large body reports its rate and the mean number of bodies in flight while it came
// (the time integral of the count, read at its first and its last byte); every `decide_every`
// bodies the tuner fits log(rate) against log(count) over the last `window` bodies and moves
// the part count by a factor of two: up when the aggregate still grows with the connection
// count (elasticity = 1 + slope > 0.5), down when it does not (< 0.25). When the counts seen
// are too alike to fit (a steady state), it doubles the part count, which either changes the
// count for the next fit or shows that the prefetcher holds it steady - and then more parts
// still shorten each shard's download (a probe; at the maximum it stays).
//
// It is `ferry doctor`'s single-against-many measurement, made on the shards being fetched
// rather than on probe requests. The choice is the gauge /ferry/cache/download_parts.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/mutex.h"
#include "ferry/cache/shard_cache.h"

namespace ferry::internal_cache {

/// One body measured: its mean rate and the mean number of bodies in flight while it came.
struct BodySample {
  double bytes_per_s = 0;
  double concurrency = 0;
};

/// d log(aggregate) / d log(count) fitted over `samples`: 1 when each connection adds its own
/// rate, 0 when they share one; NaN when there are too few samples or their counts are too
/// alike to fit a slope.
double ConnectionElasticity(std::span<const BodySample> samples);

class PartTuner {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    uint32_t initial = 4;
    uint32_t min_parts = 1;
    uint32_t max_parts = kMaxAutoDownloadParts;
    size_t window = 24;       // bodies the fit looks at
    size_t decide_every = 8;  // bodies between two decisions
  };

  explicit PartTuner(Options options);
  PartTuner() : PartTuner(Options{}) {}

  /// Parts for the next large download.
  uint32_t parts() const;

  /// The bodies the next decision will fit, oldest first.
  std::vector<BodySample> RecentSamples() const;

  /// One body being measured. Move-only; dropping it unfinished (a failed read) records nothing.
  class Body {
   public:
    Body() = default;
    Body(Body&& other) noexcept;
    Body& operator=(Body&&) = delete;
    Body(const Body&) = delete;
    ~Body();

    /// Called with every chunk of the body as it arrives (on the transfer's hot path: the clock
    /// is read for the first chunk only); an empty one changes nothing. The second form gives
    /// the time, for tests.
    void Received(uint64_t bytes);
    void Received(uint64_t bytes, Clock::time_point now);
    /// The last byte has arrived: records the sample.
    void Finish(Clock::time_point now = Clock::now());

   private:
    friend class PartTuner;
    explicit Body(PartTuner* tuner) : tuner_(tuner) {}
    PartTuner* tuner_ = nullptr;
    bool started_ = false;
    Clock::time_point start_;
    double busy_at_start_ = 0;  // the tuner's count integral at the first byte
    uint64_t bytes_ = 0;
  };

  /// Measures one response body (of a ranged part or of a whole large object).
  Body Track() { return Body(this); }

 private:
  void Advance(Clock::time_point now) REQUIRES(mu_);  // brings busy_ up to `now`
  void Record(const BodySample& sample) EXCLUDES(mu_);

  const Options options_;
  mutable Mutex mu_;
  uint32_t parts_ GUARDED_BY(mu_);
  uint32_t active_ GUARDED_BY(mu_) = 0;  // bodies between their first and last byte
  double busy_ GUARDED_BY(mu_) = 0;      // integral of active_ over time, in body-seconds
  Clock::time_point last_change_ GUARDED_BY(mu_) = Clock::now();
  std::vector<BodySample> samples_ GUARDED_BY(mu_);  // ring of the last options_.window
  size_t next_sample_ GUARDED_BY(mu_) = 0;
  size_t since_decision_ GUARDED_BY(mu_) = 0;
};

}  // namespace ferry::internal_cache
