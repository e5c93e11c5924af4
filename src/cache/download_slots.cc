#include "cache/download_slots.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "base/stoppable_sleep.h"
#include "cache/cache_layout.h"

namespace ferry::internal_cache {
namespace {

constexpr auto kFirstNap = std::chrono::milliseconds(2);
constexpr auto kLongestNap = std::chrono::milliseconds(20);

}  // namespace

Result<DownloadSlots> DownloadSlots::Open(const std::filesystem::path& folder, uint32_t slots) {
  if (slots == 0) {
    return InvalidArgumentError(
        fmt::format("{}: a node_download_concurrency of 0 would never download", folder.string()));
  }
  FERRY_RETURN_IF_ERROR(CreateCacheFolders(folder));
  return DownloadSlots(folder, slots);
}

Result<FileLock> DownloadSlots::Take(std::stop_token stop) {
  std::chrono::milliseconds nap = kFirstNap;
  for (;;) {
    const uint32_t first = next_.fetch_add(1, std::memory_order_relaxed);
    for (uint32_t i = 0; i < slots_; ++i) {
      FERRY_ASSIGN_OR_RETURN(
          auto slot,
          FileLock::TryLock(folder_ / std::to_string((first + i) % slots_), LockMode::kExclusive));
      if (slot) return std::move(*slot);
    }
    if (!SleepUnlessStopped(nap, stop)) {
      return CancelledError(
          fmt::format("{}: stopped while waiting for a download slot", folder_.string()));
    }
    nap = std::min(nap * 2, kLongestNap);
  }
}

}  // namespace ferry::internal_cache
