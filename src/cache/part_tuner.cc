#include "cache/part_tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "base/log.h"
#include "ferry/metrics/metrics.h"

namespace ferry::internal_cache {
namespace {

// Below this variance of log(count) (counts within about +-15 % of each other) the slope is
// mostly noise: the tuner probes instead of fitting.
constexpr double kMinLogCountVariance = 0.02;
constexpr size_t kMinSamples = 6;
// Moves up when adding a connection still adds at least half a connection's rate; down when it
// adds under a quarter.
constexpr double kMoreAbove = 0.5;
constexpr double kFewerBelow = 0.25;
// Bodies shorter than this say more about the scheduler than about the link.
constexpr double kMinBodySeconds = 0.002;

metrics::Gauge& PartsGauge() {
  static metrics::Gauge& gauge =
      metrics::GetGauge("/ferry/cache/download_parts", metrics::AcrossProcesses::kLargest);
  return gauge;
}

}  // namespace

double ConnectionElasticity(std::span<const BodySample> samples) {
  constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
  size_t n = 0;
  double sx = 0, sy = 0;
  for (const BodySample& s : samples) {
    if (s.bytes_per_s <= 0 || s.concurrency <= 0) continue;
    sx += std::log(s.concurrency);
    sy += std::log(s.bytes_per_s);
    ++n;
  }
  if (n < kMinSamples) return kUnknown;
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (const BodySample& s : samples) {
    if (s.bytes_per_s <= 0 || s.concurrency <= 0) continue;
    const double dx = std::log(s.concurrency) - mx;
    sxx += dx * dx;
    sxy += dx * (std::log(s.bytes_per_s) - my);
  }
  if (sxx / n < kMinLogCountVariance) return kUnknown;
  // rate ~ count^slope, so the aggregate (count x rate) ~ count^(1 + slope).
  return 1 + sxy / sxx;
}

PartTuner::PartTuner(Options options)
    : options_(options), parts_(std::clamp(options.initial, options.min_parts, options.max_parts)) {
  samples_.reserve(options_.window);
  PartsGauge().Set(parts_);
}

uint32_t PartTuner::parts() const {
  MutexLock lock(mu_);
  return parts_;
}

std::vector<BodySample> PartTuner::RecentSamples() const {
  MutexLock lock(mu_);
  std::vector<BodySample> out = samples_;
  // Once full, the ring's oldest entry is the next to be overwritten.
  if (out.size() == options_.window) {
    std::rotate(out.begin(), out.begin() + static_cast<ptrdiff_t>(next_sample_), out.end());
  }
  return out;
}

void PartTuner::Advance(Clock::time_point now) {
  if (now > last_change_) {
    busy_ += active_ * std::chrono::duration<double>(now - last_change_).count();
    last_change_ = now;
  }
}

void PartTuner::Record(const BodySample& sample) {
  MutexLock lock(mu_);
  if (samples_.size() < options_.window) {
    samples_.push_back(sample);
  } else {
    samples_[next_sample_] = sample;
  }
  next_sample_ = (next_sample_ + 1) % options_.window;
  if (++since_decision_ < options_.decide_every) return;
  since_decision_ = 0;
  const double elasticity = ConnectionElasticity(samples_);
  const uint32_t before = parts_;
  if (std::isnan(elasticity)) {
    // Counts too alike to tell: more parts for one period, so that the next fit can. At the top
    // it stays there: the prefetcher keeps the count of bodies steady by fetching fewer shards
    // at once when each comes in more parts, and then parts still cut the time a shard takes,
    // which is what a capped connection needs; where one connection carries the link, fewer
    // parts gain ~10 % (docs/benchmarks.md), so erring upwards costs less than the other way.
    if (samples_.size() >= kMinSamples) parts_ *= 2;
  } else if (elasticity > kMoreAbove) {
    parts_ *= 2;
  } else if (elasticity < kFewerBelow) {
    parts_ /= 2;
  }
  parts_ = std::clamp(parts_, options_.min_parts, options_.max_parts);
  if (parts_ != before) PartsGauge().Set(parts_);
  Log().debug("part tuner: elasticity {:.2f} over {} bodies: {} -> {} parts", elasticity,
              samples_.size(), before, parts_);
}

PartTuner::Body::Body(Body&& other) noexcept
    : tuner_(std::exchange(other.tuner_, nullptr)),
      started_(other.started_),
      start_(other.start_),
      busy_at_start_(other.busy_at_start_),
      bytes_(other.bytes_) {}

PartTuner::Body::~Body() {
  if (tuner_ == nullptr || !started_) return;
  MutexLock lock(tuner_->mu_);
  tuner_->Advance(Clock::now());
  --tuner_->active_;
}

void PartTuner::Body::Received(uint64_t bytes) {
  if (bytes == 0) return;  // the transport asking whether to go on: the body has not started
  if (started_ || tuner_ == nullptr) {
    bytes_ += bytes;
    return;
  }
  Received(bytes, Clock::now());
}

void PartTuner::Body::Received(uint64_t bytes, Clock::time_point now) {
  if (tuner_ == nullptr || bytes == 0) return;
  if (!started_) {
    MutexLock lock(tuner_->mu_);
    tuner_->Advance(now);
    ++tuner_->active_;
    started_ = true;
    start_ = now;
    busy_at_start_ = tuner_->busy_;
  }
  bytes_ += bytes;
}

void PartTuner::Body::Finish(Clock::time_point now) {
  if (tuner_ == nullptr || !started_) return;
  PartTuner* tuner = std::exchange(tuner_, nullptr);
  double busy = 0;
  {
    MutexLock lock(tuner->mu_);
    tuner->Advance(now);
    busy = tuner->busy_ - busy_at_start_;
    --tuner->active_;
  }
  const double seconds = std::chrono::duration<double>(now - start_).count();
  if (seconds < kMinBodySeconds) return;
  tuner->Record(
      {.bytes_per_s = static_cast<double>(bytes_) / seconds, .concurrency = busy / seconds});
}

}  // namespace ferry::internal_cache
