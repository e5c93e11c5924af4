// DownloadSlots: at most n shard downloads at once from one cache folder, across every thread
// and every process on the node that reads the folder with the same n
// (node_download_concurrency): the workers of all ranks of a job share one link, and each
// worker's prefetcher would otherwise size its downloads as if the link were its own.
//
// The folder's .ferry/slots/ holds n lock files, "0" to "n-1"; a download runs while it holds
// one of them exclusively. flock locks belong to the open file description, so threads of one
// process conflict as processes do, and the slots of a killed process free themselves. Take
// tries every slot once, starting where the last call of this object started plus one (so that
// waiters do not all try slot 0 first), then naps - 2 ms at first, doubling up to 20 ms - and
// tries again: flock cannot wait for any one of several files.
//
// Thread-safety: Take may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <stop_token>

#include "cache/file_lock.h"
#include "ferry/result.h"

namespace ferry::internal_cache {

class DownloadSlots {
 public:
  /// Slots "0" to "slots-1" under `folder`, which Open creates if missing. \pre slots >= 1.
  static Result<DownloadSlots> Open(const std::filesystem::path& folder, uint32_t slots);

  DownloadSlots(DownloadSlots&& other) noexcept
      : folder_(std::move(other.folder_)), slots_(other.slots_), next_(other.next_.load()) {}
  DownloadSlots& operator=(DownloadSlots&&) = delete;

  /// A free slot, held until the returned lock is dropped. Waits while every slot is taken,
  /// until `stop` is requested (then kCancelled). An error names the slot file.
  Result<FileLock> Take(std::stop_token stop = {});

  uint32_t slots() const { return slots_; }

 private:
  DownloadSlots(std::filesystem::path folder, uint32_t slots)
      : folder_(std::move(folder)), slots_(slots) {}

  std::filesystem::path folder_;
  uint32_t slots_;
  std::atomic<uint32_t> next_{0};
};

}  // namespace ferry::internal_cache
