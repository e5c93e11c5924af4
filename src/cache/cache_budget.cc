#include "cache/cache_budget.h"

#include <algorithm>
#include <cstdint>

namespace ferry::internal_cache {

uint64_t CacheBudget::WorkingSetRoom() const { return limit_ ? *limit_ / 2 : UINT64_MAX; }

uint64_t CacheBudget::LimitToHold(uint64_t working_set) {
  return working_set > UINT64_MAX / 2 ? UINT64_MAX : 2 * working_set;
}

uint64_t CacheBudget::OpenBytesPerReader(uint32_t readers) const {
  if (!limited()) return UINT64_MAX;
  return *limit_ / 4 / std::max<uint32_t>(1, readers);
}

uint64_t CacheBudget::AheadBytesPerReader(uint32_t readers, uint64_t working_set) const {
  if (!limited()) return UINT64_MAX;
  const uint64_t quarter = *limit_ / 4;
  const uint64_t rest = *limit_ - quarter - std::min(working_set, *limit_ - quarter);
  return std::max(quarter, rest) / std::max<uint32_t>(1, readers);
}

}  // namespace ferry::internal_cache
