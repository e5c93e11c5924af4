#include "cache/link_estimator.h"

#include <algorithm>

namespace ferry::internal_cache {

void LinkEstimator::Record(double seconds, uint64_t bytes, uint32_t concurrent) {
  if (!(seconds > 0)) return;
  ++fetches_;
  latency_s_ = Ewma(latency_s_, seconds);
  mean_bytes_ = Ewma(mean_bytes_, static_cast<double>(bytes));
  // The link carried this fetch's bytes and, meanwhile, about as much for each of the others.
  bandwidth_ =
      Ewma(bandwidth_, static_cast<double>(bytes) * std::max<uint32_t>(1, concurrent) / seconds);
}

double LinkEstimator::FetchesFor(double bytes_per_s) const {
  if (!measured()) return 0;
  return bytes_per_s * latency_s_ * kHeadroom / std::max(mean_bytes_, 1.0);
}

}  // namespace ferry::internal_cache
