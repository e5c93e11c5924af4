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
//   3. The global order interleaves the canonical sequences position by position: position j of
//      canonical node 0, 1, ..., C-1, then position j + 1 (Mosaic's layout): exactly N samples,
//      whatever C is.
//   4. It is padded to a multiple of the ranks (nodes x ranks_per_node) by repeating fewer than
//      `ranks` samples, each on another rank than the one that reads it first (with
//      `drop_last`: cut to whole world batches of ranks x batch_size instead), and dealt like
//      cards: position i to node i % P, then rank (i / P) % R of that node. Each rank's sequence
//      is cut into batches of `batch_size`, dealt round robin to its workers from worker 0 (the
//      order torch's DataLoader takes them in); the last batch may be partial. So every rank
//      reads exactly ceil(N / ranks) samples, and after n training steps the world has read
//      exactly the first n x batch_size x ranks positions of the global order. When P divides
//      C, node p reads the canonical nodes c with c % P == p, so it keeps its shards.
//   5. With a `batching` method other than random (Mosaic's batching_method) the global order is
//      composed from each stream's own order (steps 1-3 run per stream) in whole global batches
//      of ranks x batch_size (src/order/batch_composition.h): per_stream draws each global
//      batch from one stream, stratified gives each stream its share of every global batch,
//      device_per_stream draws each device's batch from one stream. Partial batches of a stream
//      are dropped, so the order is whole global batches and step 4's padding adds nothing; it
//      depends on the ranks and the batch size, and resume_from is rounded down to whole global
//      batches.
// Consequences, all tested: every sample appears exactly once per epoch across all workers
// (plus fewer than `ranks` repeats); the same inputs give the same order; epochs differ when
// shuffling; the global order does not depend on the physical world shape, so a job resumed on
// another shape (same C) continues exactly.
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

/// Which streams a batch draws from (Mosaic's batching_method; model step 5).
enum class BatchingMethod { kRandom, kPerStream, kStratified, kDevicePerStream };

/// "random", "per_stream", "stratified", "device_per_stream" (kInvalidArgument otherwise, listing
/// them).
Result<BatchingMethod> ParseBatchingMethod(std::string_view name);
std::string_view BatchingMethodName(BatchingMethod method);

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
  /// Canonical nodes; 0 = Mosaic's default: 64 x nodes for py1s, else nodes. It depends on the
  /// node count, so pin it to resume on another number of nodes.
  uint32_t num_canonical_nodes = 0;
  uint32_t batch_size = 1;  // per rank batch (what one DataLoader step takes), in samples
  bool drop_last = false;   // cut to whole world batches instead of padding to whole ranks
  BatchingMethod batching = BatchingMethod::kRandom;
};

/// One stream's part of a plan's shards, for a batching method other than random: stream s owns
/// the `shards` shards that follow those of streams 0..s-1.
struct StreamShards {
  uint64_t shards = 0;
  double proportion = 1;  // its share of the epoch: of each global batch with kStratified
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
  // What makes a sequential walk cheap per sample: the shuffle blocks this cursor computed last
  // (src/order/epoch_plan.cc). Only an
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
  /// kInvalidArgument for a zero dimension or batch, naming the numbers; likewise for a
  /// shuffle_block_size outside [1, 2^30] where the algorithm uses it. Any C up to 2^20 is
  /// accepted (more canonical nodes than samples leaves some empty).
  ///
  /// `resume_from` (resumption) is how many samples of the global order the world had already
  /// read in this epoch, under any earlier world shape with the same C: the plan covers only
  /// positions [resume_from, N), so a resumed job reads every unseen sample exactly once
  /// (nothing, an empty plan, from N on).
  ///
  /// `streams` groups the shards by stream for `options.batching` other than kRandom (empty: one
  /// stream of all of them); kInvalidArgument when they do not add up to the shards, or for a
  /// stream too small for the method (naming it and the batch).
  static Result<std::shared_ptr<const EpochPlan>> Create(std::vector<uint64_t> shard_samples,
                                                         const OrderOptions& options,
                                                         const WorldShape& world, uint64_t epoch,
                                                         uint64_t resume_from = 0,
                                                         std::vector<StreamShards> streams = {});

  uint64_t dataset_samples() const;
  /// Samples this plan deals after padding or cutting (what remains when resumed): a multiple of
  /// the ranks.
  uint64_t epoch_samples() const;
  /// Of them, the repeats that pad the epoch to whole ranks (fewer than the ranks).
  uint64_t padding() const;
  /// Samples each rank reads this epoch (epoch_samples / ranks), over all its workers.
  uint64_t samples_per_rank() const;
  /// Samples worker `id` reads this epoch (the batches dealt to it; workers of a rank may differ
  /// by one batch). \pre id inside the world.
  uint64_t WorkerSamples(const WorkerId& id) const;
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
