#include "order/partition.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "base/int128.h"
#include "base/int_math.h"
#include "order/canonical_spans.h"

namespace ferry::internal_order {
namespace {

std::string Shape(const WorldShape& w) {
  return std::to_string(w.nodes) + " nodes x " + std::to_string(w.ranks_per_node) + " ranks x " +
         std::to_string(w.workers_per_rank) + " workers";
}

}  // namespace

uint32_t DefaultCanonicalNodes(const WorldShape& world, const OrderOptions& options) {
  const uint64_t c = options.algo == ShuffleAlgo::kPy1s ? uint64_t{64} * world.nodes : world.nodes;
  return static_cast<uint32_t>(std::clamp<uint64_t>(c, 1, kMaxCanonicalNodes));
}

Result<Partition> Partition::Make(const WorldShape& world, const OrderOptions& options,
                                  uint64_t dataset_samples, uint64_t resume_from) {
  if (world.nodes == 0 || world.ranks_per_node == 0 || world.workers_per_rank == 0) {
    return InvalidArgumentError("world shape " + Shape(world) +
                                ": every dimension must be at least 1");
  }
  if (options.batch_size == 0) return InvalidArgumentError("batch_size must be at least 1, not 0");
  const UInt128 world_batch = static_cast<UInt128>(world.nodes) * world.ranks_per_node *
                              world.workers_per_rank * options.batch_size;
  if (world_batch > (UInt128{1} << 48)) {
    return InvalidArgumentError("world shape " + Shape(world) + " with batch_size " +
                                std::to_string(options.batch_size) +
                                " gives a world batch past 2^48 samples");
  }
  Partition p;
  p.world_ = world;
  p.batch_size_ = options.batch_size;
  p.canonical_nodes_ = options.num_canonical_nodes != 0 ? options.num_canonical_nodes
                                                        : DefaultCanonicalNodes(world, options);
  if (p.canonical_nodes_ > kMaxCanonicalNodes) {
    return InvalidArgumentError("num_canonical_nodes = " + std::to_string(p.canonical_nodes_) +
                                " is past the supported " + std::to_string(kMaxCanonicalNodes));
  }
  p.samples_ = dataset_samples;
  p.skipped_ = std::min(resume_from, dataset_samples);
  p.remaining_ = dataset_samples - p.skipped_;
  const uint64_t ranks = uint64_t{world.nodes} * world.ranks_per_node;
  if (options.drop_last) {
    const uint64_t step = ranks * options.batch_size;
    p.epoch_ = p.remaining_ / step * step;
  } else {
    p.epoch_ = CeilDiv(p.remaining_, ranks) * ranks;
  }
  p.per_rank_ = p.epoch_ / ranks;
  return p;
}

uint64_t Partition::WorkerSamples(const WorkerId& id) const {
  const uint64_t batches = CeilDiv(per_rank_, batch_size_);
  if (id.worker >= batches) return 0;
  const uint64_t mine = (batches - 1 - id.worker) / world_.workers_per_rank + 1;
  const uint64_t last = id.worker + (mine - 1) * world_.workers_per_rank;
  const uint64_t partial = per_rank_ % batch_size_;
  return mine * batch_size_ - (last == batches - 1 && partial != 0 ? batch_size_ - partial : 0);
}

CanonicalPosition Partition::Interleaved(uint64_t k) const {
  const uint64_t c = canonical_nodes_;
  const uint64_t full = samples_ / c;  // positions every span has
  if (k < full * c) return {static_cast<uint32_t>(k % c), k / c};
  // Position `full` of the long spans: the i-th long span is the smallest c with
  // floor((c + 1) * r / C) > i (CanonicalSpans cuts at floor(c * N / C)).
  const uint64_t r = samples_ % c;
  const uint64_t i = k - full * c;
  return {static_cast<uint32_t>(CeilDiv((i + 1) * c, r) - 1), full};
}

uint64_t PaddedSource(uint64_t q, uint64_t n, uint64_t padded) {
  if (q < n) return q;
  const uint64_t repeats = padded - n;
  return (q + n - repeats % n) % n;
}

uint64_t Partition::Source(uint64_t i) const {
  return skipped_ + PaddedSource(i, remaining_, epoch_);
}

uint64_t Partition::Position(const WorkerId& id, uint64_t j) const {
  const uint64_t batch = j / batch_size_ * world_.workers_per_rank + id.worker;
  const uint64_t t = batch * batch_size_ + j % batch_size_;  // index in the rank's sequence
  return (t * world_.ranks_per_node + id.rank) * world_.nodes + id.node;
}

uint32_t Partition::NodesPerBatch() const {
  // A batch holds consecutive positions of its rank, `ranks` apart in the global order.
  const uint64_t ranks = uint64_t{world_.nodes} * world_.ranks_per_node;
  const uint64_t cycle = canonical_nodes_ / std::gcd(uint64_t{canonical_nodes_}, ranks);
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(batch_size_, cycle)));
}

}  // namespace ferry::internal_order
