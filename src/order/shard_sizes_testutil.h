// Shard sample counts for the order tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "order/random.h"

namespace ferry::testing {

/// Shards of random sizes in [1, max_size] adding up to `total`.
inline std::vector<uint64_t> RandomShardsAddingUpTo(uint64_t total, uint64_t max_size,
                                                    uint64_t seed) {
  internal_order::Rng rng(seed);
  std::vector<uint64_t> sizes;
  for (uint64_t left = total; left > 0;) {
    const uint64_t n = std::min(left, rng.Between(1, max_size));
    sizes.push_back(n);
    left -= n;
  }
  return sizes;
}

}  // namespace ferry::testing
