// FileOrder: which files one worker reads in an epoch, a pure function of (file count, seed,
// epoch, world shape, worker).
//
//   1. the epoch's permutation: the identity, or with shuffle a Fisher-Yates shuffle drawn from
//      DeriveKey(seed, epoch) (order/random.h: the same on every platform);
//   2. dealt to the ranks as torch's DistributedSampler does: padded to a multiple of the ranks
//      by repeating the permutation from its start (or, with drop_last, cut to one), rank g
//      (node x ranks_per_node + rank) takes positions g, g + ranks, g + 2 ranks, ...;
//   3. the rank's share dealt round robin to its DataLoader workers.
// So every file is read exactly once per epoch across the world whenever the rank count divides
// the file count; otherwise the first (ranks - count % ranks) files of the permutation are read
// twice (padding) or the last count % ranks not at all (drop_last), and the ranks stay in step.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "ferry/order/epoch_plan.h"
#include "ferry/result.h"

namespace ferry::internal_files {

struct FileOrderOptions {
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;
};

/// The epoch's permutation of [0, num_files).
std::vector<uint64_t> EpochPermutation(uint64_t num_files, uint64_t epoch,
                                       const FileOrderOptions& options);

/// The listing indices `worker` reads in `epoch`, in order. kInvalidArgument for a worker
/// outside `world` or an empty world.
Result<std::vector<uint64_t>> WorkerFiles(uint64_t num_files, const WorldShape& world,
                                          const WorkerId& worker, uint64_t epoch,
                                          const FileOrderOptions& options);

}  // namespace ferry::internal_files
