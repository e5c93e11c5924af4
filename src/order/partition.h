// Partition: how the canonical sequences are interleaved into one global order and dealt to the
// physical world (EpochPlan model, steps 3 and 4), as integer arithmetic on positions - no
// sample ids, no arrays. The layout is Mosaic Streaming's (streaming/base/partition/orig.py), so
// the counts a user sees are the same: every rank reads exactly ceil(N / ranks) samples.
//
//   Interleaving. With N samples over C canonical nodes (span c has floor(N/C) or ceil(N/C)
//   samples), the global order takes position j of every canonical node c = 0..C-1, then
//   position j + 1: sample k is node k % C at position k / C while k < C * floor(N/C); the last
//   N % C samples are position floor(N/C) of the long spans, in node order. Unlike Mosaic, a
//   short span is not padded by repeating its last sample: the global order has exactly N
//   samples, whatever C is.
//   Resumption. A plan resumed at `resume_from` = s covers positions [s, N) of that order (any
//   s: the order does not depend on the world shape, so a job may resume on another one).
//   Padding across ranks. The M = N - s remaining samples are padded to E = ceil(M / ranks) x
//   ranks (ranks = nodes x ranks_per_node) by repeating d = E - M < ranks of them: padded
//   position i (M <= i < E) reads position (i - d) mod M, which lands on another rank than the
//   one that read it first, so no rank sees a sample twice (while M >= ranks). With drop_last,
//   E = floor(M / (ranks x batch_size)) x ranks x batch_size instead: whole world batches, no
//   repeats. Position i of the padded order goes to node i % P, rank (i / P) % R of the node, at
//   index t = i / (P x R) of that rank: every rank reads E / ranks samples, so after n training
//   steps of `batch_size` the world has read exactly the first n x batch_size x ranks positions.
//   Workers. A rank's sequence is cut into batches of `batch_size`, dealt round robin to its
//   workers from worker 0 (batch b to worker b % W): the order in which torch's DataLoader
//   takes them. The last batch may be partial and some workers may get one batch fewer; nothing
//   is padded, so the samples of a rank's workers add up to exactly E / ranks.
//   Locality. When P divides C, node p reads canonical nodes c with c % P == p, so each node
//   keeps its shards (but for the last N % C samples, dealt in global order: they may cost a
//   node a shard of another node's); when C divides P, the P / C nodes of each canonical node
//   share it.
//
// Default C (num_canonical_nodes = 0): Mosaic's, 64 x nodes for py1s (shards shuffled within a
// node: more canonical nodes mix more shards), else nodes. It depends only on the node count.
//
// Thread-safety: a value.
#pragma once

#include <cstdint>

#include "ferry/order/epoch_plan.h"
#include "ferry/result.h"

namespace ferry::internal_order {

/// A position in the sequence of one canonical node.
struct CanonicalPosition {
  uint32_t node = 0;
  uint64_t position = 0;
  friend bool operator==(const CanonicalPosition&, const CanonicalPosition&) = default;
};

uint32_t DefaultCanonicalNodes(const WorldShape& world, const OrderOptions& options);

/// The position in [0, n) that position q of a sequence of n padded to `padded` reads: itself,
/// or for a repeat (q >= n), q - (padded - n) mod n - another rank's when n >= the ranks.
/// \pre q < padded, n > 0.
uint64_t PaddedSource(uint64_t q, uint64_t n, uint64_t padded);

class Partition {
 public:
  /// kInvalidArgument, naming the numbers, for a zero dimension or batch, a world too large, or
  /// more than kMaxCanonicalNodes canonical nodes.
  static Result<Partition> Make(const WorldShape& world, const OrderOptions& options,
                                uint64_t dataset_samples, uint64_t resume_from);

  uint32_t num_canonical_nodes() const { return canonical_nodes_; }
  /// Samples the plan deals (E): what remains after resume_from, padded or cut.
  uint64_t epoch_samples() const { return epoch_; }
  /// Of them, repeats added so every rank reads as many (E - M).
  uint64_t padding() const { return epoch_ > remaining_ ? epoch_ - remaining_ : 0; }
  uint64_t samples_per_rank() const { return per_rank_; }
  /// Samples worker `id` reads (its rank's share, cut into batches dealt round robin).
  uint64_t WorkerSamples(const WorkerId& id) const;

  /// Where position i of the padded global order comes from. \pre i < epoch_samples().
  CanonicalPosition Global(uint64_t i) const { return Interleaved(Source(i)); }
  /// Where worker `id`'s j-th sample comes from. \pre j < WorkerSamples(id).
  CanonicalPosition OfWorker(const WorkerId& id, uint64_t j) const {
    return Global(Position(id, j));
  }
  /// The position of the unpadded global order, in [resume_from, N), that padded position i
  /// reads. \pre i < epoch_samples().
  uint64_t Source(uint64_t i) const;
  /// The padded position worker `id`'s j-th sample is at. \pre j < WorkerSamples(id).
  uint64_t Position(const WorkerId& id, uint64_t j) const;
  /// How many canonical nodes one batch of a worker draws from, at most (its working set).
  uint32_t NodesPerBatch() const;

 private:
  /// Position k of the unpadded global order. \pre k < N.
  CanonicalPosition Interleaved(uint64_t k) const;

  WorldShape world_;
  uint32_t batch_size_ = 1;
  uint32_t canonical_nodes_ = 1;
  uint64_t samples_ = 0;    // N
  uint64_t skipped_ = 0;    // s, at most N
  uint64_t remaining_ = 0;  // M = N - s
  uint64_t epoch_ = 0;      // E
  uint64_t per_rank_ = 0;   // E / ranks
};

}  // namespace ferry::internal_order
