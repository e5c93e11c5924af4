// Partition: how the canonical sequences are interleaved into rounds and dealt to the physical
// world (EpochPlan model, steps 3 and 4), as integer arithmetic on positions - no sample ids.
//
//   world_batch = nodes * ranks_per_node * workers_per_rank * batch_size; unit = world_batch / C.
//   Round t takes positions [s + t*unit, s + (t+1)*unit) of every canonical sequence, where s is
//   what a resumed plan skips (resume_from / C). The global order is round-major, then canonical
//   node c = 0..C-1, then position: global sample i is node (i % world_batch) / unit at position
//   s + (i / world_batch) * unit + i % unit.
//   Physical node p owns canonical nodes [p*C/P, (p+1)*C/P); its slice of a round is their units
//   concatenated (ranks*workers*batch_size samples), cut into batches of batch_size. The batches
//   are dealt like cards around the node's ranks, once per worker index: batch q goes to rank
//   q % ranks, worker q / ranks. Each worker thus gets one whole batch per round, and since a
//   rank's DataLoader takes one batch from each worker in turn, every training step consumes one
//   contiguous stretch of each node's slice, in order.
//   Rounds: without drop_last, enough to exhaust the longest canonical sequence (ceil(N/C)
//   samples); a shorter one is padded by repeating itself from its start (position j reads
//   position j mod length). With drop_last, only rounds that the shortest sequence (floor(N/C))
//   fills. A resumed plan counts the same from position s.
//
// Default C (num_canonical_nodes = 0): nodes * d, with d the largest divisor of
// ranks_per_node * workers_per_rank * batch_size that is at most 64 and keeps C <= N (d = 1 when
// even nodes > N). C is then a multiple of nodes, at most 64 x nodes (Mosaic's default), divides
// the world batch, and leaves no canonical node empty when the dataset allows. It depends on the
// world shape, so a job that resumes on another shape must pass the C it started with.
//
// Thread-safety: a value.
#pragma once

#include <cstdint>

#include "ferry/result.h"
#include "ferry/stream/epoch_plan.h"

namespace ferry::internal_order {

/// A position in the padded sequence of one canonical node.
struct CanonicalPosition {
  uint32_t node = 0;
  uint64_t position = 0;
  friend bool operator==(const CanonicalPosition&, const CanonicalPosition&) = default;
};

uint32_t DefaultCanonicalNodes(const WorldShape& world, uint32_t batch_size,
                               uint64_t dataset_samples);

class Partition {
 public:
  /// kInvalidArgument, naming the numbers, for a zero dimension or batch, a C that is not a
  /// multiple of nodes or does not divide the world batch, a resume_from that is not a multiple
  /// of C, or (without drop_last) fewer samples than canonical nodes.
  static Result<Partition> Make(const WorldShape& world, const OrderOptions& options,
                                uint64_t dataset_samples, uint64_t resume_from);

  uint32_t num_canonical_nodes() const { return canonical_nodes_; }
  uint64_t unit() const { return unit_; }
  uint64_t world_batch() const { return world_batch_; }
  uint64_t rounds() const { return rounds_; }
  /// Positions of every canonical sequence that a resumed plan skips.
  uint64_t skipped() const { return skipped_; }
  uint64_t epoch_samples() const { return rounds_ * world_batch_; }
  uint64_t samples_per_worker() const { return rounds_ * batch_size_; }

  /// Where global sample i comes from. \pre i < epoch_samples().
  CanonicalPosition Global(uint64_t i) const;
  /// Where worker `id`'s j-th sample comes from. \pre id valid, j < samples_per_worker().
  CanonicalPosition OfWorker(const WorkerId& id, uint64_t j) const;

  /// OfWorker(id, j), and how many samples from j on follow it at consecutive positions of the
  /// same canonical node (to the end of the batch or of the unit): a cursor walks a run without
  /// arithmetic.
  struct Run {
    CanonicalPosition first;
    uint64_t length = 0;
  };
  Run WorkerRun(const WorkerId& id, uint64_t j) const;
  /// How many canonical nodes one batch of worker `id` draws from (its working set).
  uint32_t NodesPerBatch(const WorkerId& id) const;

 private:
  WorldShape world_;
  uint32_t batch_size_ = 1;
  uint32_t canonical_nodes_ = 1;
  uint64_t world_batch_ = 1;
  uint64_t unit_ = 1;
  uint64_t skipped_ = 0;
  uint64_t rounds_ = 0;
};

}  // namespace ferry::internal_order
