// DownloadSlots: at most n shard downloads at once from one cache folder, across every thread
// and every process on the node that reads the folder with the same n
// (node_download_concurrency): the workers of all ranks of a job share one link, and each
// worker's prefetcher would otherwise size its downloads as if the link were its own.
//
// The folder's .ferry/slots/ holds n lock files, "0" to "n-1"; a download runs while it holds
// one of them exclusively. flock locks belong to the open file description, so threads of one
// process conflict as processes do, and the slots of a killed process free themselves. flock
// cannot wait for any one of several files, so a waiter polls: it opens the n files once, tries
// each (from a place that moves on with every call, so that waiters do not all try slot 0
// first), naps - 2 ms at first, doubling up to 20 ms - and tries again. At most n threads of one
// DownloadSlots poll at once (more could not all get a slot); the others wait for one of them
// to finish, without polling.
//
// Thread-safety: Take may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stop_token>

#include "base/mutex.h"
#include "cache/file_lock.h"
#include "ferry/result.h"

namespace ferry::internal_cache {

/// The most slots a folder may have: far more downloads at once than any link needs, and few
/// enough files to try in one poll.
inline constexpr uint32_t kMaxDownloadSlots = 1024;

/// OK when 1 <= slots <= kMaxDownloadSlots; else kInvalidArgument naming
/// node_download_concurrency (the option that sets it).
Status CheckDownloadSlotCount(uint32_t slots);

class DownloadSlots {
 public:
  /// Slots "0" to "slots-1" under `folder`, which Open creates if missing. An error (naming the
  /// folder) where CheckDownloadSlotCount finds one.
  static Result<std::unique_ptr<DownloadSlots>> Open(const std::filesystem::path& folder,
                                                     uint32_t slots);

  /// A free slot, held until the returned lock is dropped. Waits while every slot is taken,
  /// until `stop` is requested (then kCancelled). An error names the slot file.
  Result<FileLock> Take(std::stop_token stop = {});

  uint32_t slots() const { return slots_; }

 private:
  DownloadSlots(std::filesystem::path folder, uint32_t slots)
      : folder_(std::move(folder)), slots_(slots) {}
  Result<FileLock> Poll(std::stop_token stop);  // one poller's loop

  const std::filesystem::path folder_;
  const uint32_t slots_;
  Mutex mu_;
  std::condition_variable_any poller_done_;
  uint32_t pollers_ GUARDED_BY(mu_) = 0;
  uint32_t next_ GUARDED_BY(mu_) = 0;  // the slot the next poller tries first
};

}  // namespace ferry::internal_cache
