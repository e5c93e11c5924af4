// EpochPlan: which sample each worker reads, in which order, in one epoch. A pure function of
// (shard sample counts, options, world shape, epoch): no I/O, no hidden state, the same on every
// node, and cheap enough to build for 100 M samples in seconds with little memory (the shuffles
// are computed lazily, block by block, not materialized as one big permutation).
//
// Model (docs/streaming.md has the full description; src/order/*.h the exact rules):
//   1. Samples are dealt to `num_canonical_nodes` canonical nodes: the shards, in an order that
//      is shuffled (by the seed, the same every epoch, so each node keeps its shards and its
//      cache) when `shuffle`, are concatenated and cut into C contiguous spans of
//      equal sample counts (within one: span c is [c*N/C, (c+1)*N/C)); a shard may straddle
//      two spans.
//   2. Each canonical node orders its samples with the shuffle algorithm: `naive` (a full
//      permutation of its samples), `py1s` (shuffle the shards' order, then samples inside each
//      shard), `py1b` (concatenate shards, shuffle within fixed blocks of `shuffle_block_size`),
//      `py1br` (the same with random block sizes around it), `py1e` (each sample moves within a
//      window of about `shuffle_block_size` around its position: shard locality is kept, and
//      the default). Without `shuffle`, shard order then sample order.
//   3. The global order interleaves the canonical sequences round by round: each round takes
//      the next `unit` samples of every canonical node, c = 0..C-1, where unit = world_batch / C
//      and world_batch = nodes * ranks_per_node * workers_per_rank * batch_size (it must divide
//      evenly). A canonical sequence shorter than the rounds need is padded by repeating its own
//      first samples (position j of a sequence of length L reads position j mod L); with
//      `drop_last` the rounds stop before any padding would be needed.
//   4. Physical node p owns canonical nodes [p*C/P, (p+1)*C/P) (C must be a multiple of P), so
//      each node reads a disjoint set of shards; within a round, its slice of the round (its
//      canonical nodes' units, concatenated) is dealt to its ranks and then workers, batch_size
//      samples each: batch q of the slice goes to rank q % ranks_per_node, worker
//      q / ranks_per_node, so each training step consumes a contiguous stretch of the slice.
// Consequences, all tested: every sample appears exactly once per epoch across all workers
// (plus the documented padding); the same inputs give the same order; epochs differ when
// shuffling; each canonical node's sequence does not depend on the physical world shape, so a
// job resumed on a different number of nodes (same C) continues every canonical stream exactly.
//
// Thread-safety: an EpochPlan is immutable (GlobalSample shares one small block cache under a
// mutex: correct from any thread, but cursors are the fast path); a WorkerCursor is used by one
// thread, and its copies are independent.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry {

enum class ShuffleAlgo { kNaive, kPy1s, kPy1b, kPy1br, kPy1e };

/// "naive", "py1s", "py1b", "py1br", "py1e" (kInvalidArgument otherwise, listing them).
Result<ShuffleAlgo> ParseShuffleAlgo(std::string_view name);
std::string_view ShuffleAlgoName(ShuffleAlgo algo);

struct WorldShape {
  uint32_t nodes = 1;
  uint32_t ranks_per_node = 1;
  uint32_t workers_per_rank = 1;

  uint32_t workers() const { return nodes * ranks_per_node * workers_per_rank; }
  friend bool operator==(const WorldShape&, const WorldShape&) = default;
};

struct OrderOptions {
  bool shuffle = false;
  ShuffleAlgo algo = ShuffleAlgo::kPy1e;
  uint64_t seed = 9176;                   // Mosaic's default shuffle_seed
  uint64_t shuffle_block_size = 1 << 18;  // samples
  /// Canonical nodes; 0 = the default: nodes x the largest divisor d <= 64 of
  /// ranks_per_node x workers_per_rank x batch_size with nodes x d <= the dataset's samples
  /// (src/order/partition.h). It depends on the world, so pin it to resume on another shape.
  uint32_t num_canonical_nodes = 0;
  uint32_t batch_size = 1;  // per worker batch, in samples
  bool drop_last = false;   // cut to whole world batches instead of padding
};

/// Identifies one worker of the world.
struct WorkerId {
  uint32_t node = 0;
  uint32_t rank = 0;    // within the node
  uint32_t worker = 0;  // within the rank
};

class EpochPlan;

namespace internal_order {
struct CursorScratch;
}  // namespace internal_order

/// Walks one worker's samples in order. Sample ids are global dataset indices (shard order,
/// then position in shard). Cheap to copy; holds a reference-counted plan.
class WorkerCursor {
 public:
  /// The next sample, or nullopt at the end of the epoch.
  std::optional<uint64_t> Next();
  /// The sample `k` positions ahead of the next one (0 = the next), without moving; nullopt past
  /// the end. For prefetching.
  std::optional<uint64_t> Peek(uint64_t k) const;
  /// Samples this worker still has in the epoch.
  uint64_t remaining() const;
  /// Samples this worker has taken (its position within its own sequence).
  uint64_t taken() const { return taken_; }
  /// Moves `n` samples ahead without reading them (at most to the end): resuming one worker
  /// exactly where it stopped.
  void Skip(uint64_t n) { taken_ += std::min(n, total_ - taken_); }

 private:
  friend class EpochPlan;
  // What makes a sequential walk O(1) per sample: the shuffle blocks this cursor computed last
  // and the run of consecutive positions it is in (src/order/epoch_plan.cc). Only an
  // optimization, so a copy starts without it: copies (a prefetcher's look-ahead, say) never
  // share mutable state and may live on different threads.
  struct Scratch {
    Scratch() = default;
    Scratch(const Scratch& /*other*/) {}
    Scratch(Scratch&&) = default;
    Scratch& operator=(const Scratch& /*other*/) {
      state.reset();
      return *this;
    }
    Scratch& operator=(Scratch&&) = default;
    std::shared_ptr<internal_order::CursorScratch> state;
  };
  internal_order::CursorScratch& scratch() const;
  uint64_t SampleAt(uint64_t j) const;

  std::shared_ptr<const EpochPlan> plan_;
  WorkerId id_;
  uint64_t taken_ = 0;
  uint64_t total_ = 0;
  mutable Scratch scratch_;
};

class EpochPlan : public std::enable_shared_from_this<EpochPlan> {
 public:
  /// kInvalidArgument for an impossible shape (num_canonical_nodes not a multiple of nodes, a
  /// zero dimension, a batch or unit that cannot be whole), naming the numbers; likewise for a
  /// shuffle_block_size outside [1, 2^30] where the algorithm uses it, and, without drop_last,
  /// fewer samples than canonical nodes (an empty canonical node has nothing to pad with).
  ///
  /// `resume_from` (resumption) is how many global samples the world had already read in this
  /// epoch, under any earlier world shape with the same C: it must be a multiple of C, and is
  /// taken as "the first resume_from / C samples of every canonical sequence are done"; the plan
  /// then covers only what remains, so a resumed job reads every unseen sample exactly once
  /// (nothing, an empty plan, once every canonical sequence is done).
  static Result<std::shared_ptr<const EpochPlan>> Create(std::vector<uint64_t> shard_samples,
                                                         const OrderOptions& options,
                                                         const WorldShape& world, uint64_t epoch,
                                                         uint64_t resume_from = 0);

  uint64_t dataset_samples() const;
  /// Samples this plan covers after padding or cutting (what remains when resumed): a multiple
  /// of the world batch.
  uint64_t epoch_samples() const;
  /// Samples each worker reads this epoch (epoch_samples / workers).
  uint64_t samples_per_worker() const;
  uint32_t num_canonical_nodes() const;
  const WorldShape& world() const;

  /// The i-th sample of the global order (0 <= i < epoch_samples()): what the world reads at
  /// that position when all workers advance in step. Random access: under a block shuffle it
  /// may build a block (O(shuffle_block_size)) when the shared cache misses.
  uint64_t GlobalSample(uint64_t i) const;

  /// A cursor over worker `id`'s samples.
  Result<WorkerCursor> Worker(const WorkerId& id) const;

  /// The shard holding global sample `sample` and the index within it
  /// (0 <= sample < dataset_samples(): a binary search over the shards).
  std::pair<uint32_t, uint64_t> Locate(uint64_t sample) const;

 private:
  friend class WorkerCursor;
  EpochPlan() = default;
  /// The worker's j-th sample.
  uint64_t WorkerSample(const WorkerId& id, uint64_t j) const;

  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ferry
