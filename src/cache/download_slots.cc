#include "cache/download_slots.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "base/stoppable_sleep.h"
#include "cache/cache_layout.h"

namespace ferry::internal_cache {
namespace {

constexpr std::chrono::milliseconds kFirstNap(2);
constexpr std::chrono::milliseconds kLongestNap(20);

// The descriptors one poller opened, closed when it is done (except the one it hands on locked).
class OpenSlots {
 public:
  explicit OpenSlots(size_t n) { fds_.reserve(n); }
  ~OpenSlots() {
    for (const int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }
  OpenSlots(const OpenSlots&) = delete;
  OpenSlots& operator=(const OpenSlots&) = delete;
  std::vector<int>& fds() { return fds_; }

 private:
  std::vector<int> fds_;
};

}  // namespace

Status CheckDownloadSlotCount(uint32_t slots) {
  if (slots >= 1 && slots <= kMaxDownloadSlots) return Status::Ok();
  return InvalidArgumentError(fmt::format(
      "node_download_concurrency must be 1 to {} (or unset), not {}", kMaxDownloadSlots, slots));
}

Result<std::unique_ptr<DownloadSlots>> DownloadSlots::Open(const std::filesystem::path& folder,
                                                           uint32_t slots) {
  FERRY_RETURN_IF_ERROR(CheckDownloadSlotCount(slots).WithContext(folder.string()));
  FERRY_RETURN_IF_ERROR(CreateCacheFolders(folder));
  return std::unique_ptr<DownloadSlots>(new DownloadSlots(folder, slots));
}

Result<FileLock> DownloadSlots::Take(std::stop_token stop) {
  {
    MutexLock lock(mu_);
    if (!poller_done_.wait(lock, stop, [&]() REQUIRES(mu_) { return pollers_ < slots_; })) {
      return CancelledError(
          fmt::format("{}: stopped while waiting for a download slot", folder_.string()));
    }
    ++pollers_;
  }
  auto slot = Poll(stop);
  {
    MutexLock lock(mu_);
    --pollers_;
  }
  poller_done_.notify_one();
  return slot;
}

Result<FileLock> DownloadSlots::Poll(std::stop_token stop) {
  uint32_t first;
  {
    MutexLock lock(mu_);
    first = next_;
    next_ = (next_ + 1) % slots_;
  }
  OpenSlots open(slots_);
  std::chrono::milliseconds nap = kFirstNap;
  for (;;) {
    for (uint32_t i = 0; i < slots_; ++i) {
      const uint32_t k = (first + i) % slots_;
      const std::filesystem::path path = folder_ / std::to_string(k);
      if (open.fds().size() <= i) {
        FERRY_ASSIGN_OR_RETURN(const int fd, OpenLockFile(path));
        open.fds().push_back(fd);
      }
      FERRY_ASSIGN_OR_RETURN(auto slot,
                             FileLock::TryLockOpened(open.fds()[i], LockMode::kExclusive, path));
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
