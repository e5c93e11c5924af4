#include "order/partition.h"

#include <algorithm>
#include <string>

#include "base/int128.h"
#include "order/canonical_spans.h"

namespace ferry::internal_order {
namespace {

std::string Shape(const WorldShape& w) {
  return std::to_string(w.nodes) + " nodes x " + std::to_string(w.ranks_per_node) + " ranks x " +
         std::to_string(w.workers_per_rank) + " workers";
}

}  // namespace

uint32_t DefaultCanonicalNodes(const WorldShape& world, uint32_t batch_size,
                               uint64_t dataset_samples) {
  const uint64_t per_node = uint64_t{world.ranks_per_node} * world.workers_per_rank * batch_size;
  uint64_t best = 1;
  for (uint64_t d = 2; d <= 64; ++d) {
    const uint64_t c = d * world.nodes;
    if (per_node % d == 0 && c <= dataset_samples && c <= kMaxCanonicalNodes) best = d;
  }
  return static_cast<uint32_t>(best * world.nodes);
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
  p.world_batch_ = static_cast<uint64_t>(world_batch);
  p.canonical_nodes_ = options.num_canonical_nodes != 0
                           ? options.num_canonical_nodes
                           : DefaultCanonicalNodes(world, options.batch_size, dataset_samples);
  const uint32_t c = p.canonical_nodes_;
  if (c > kMaxCanonicalNodes) {
    return InvalidArgumentError("num_canonical_nodes = " + std::to_string(c) +
                                " is past the supported " + std::to_string(kMaxCanonicalNodes));
  }
  if (c % world.nodes != 0) {
    return InvalidArgumentError("num_canonical_nodes = " + std::to_string(c) +
                                " is not a multiple of nodes = " + std::to_string(world.nodes) +
                                ", so canonical nodes cannot be split evenly over nodes");
  }
  if (p.world_batch_ % c != 0) {
    return InvalidArgumentError(
        "the world batch (" + Shape(world) + " x batch_size " + std::to_string(options.batch_size) +
        " = " + std::to_string(p.world_batch_) +
        " samples) is not divisible by num_canonical_nodes = " + std::to_string(c) +
        ", so a round cannot take a whole unit from every canonical node; pick a "
        "num_canonical_nodes that divides " +
        std::to_string(p.world_batch_) + " (or 0 for the default)");
  }
  p.unit_ = p.world_batch_ / c;
  if (resume_from % c != 0) {
    return InvalidArgumentError("resume_from = " + std::to_string(resume_from) +
                                " is not a multiple of num_canonical_nodes = " + std::to_string(c));
  }
  if (!options.drop_last && dataset_samples < c) {
    return InvalidArgumentError(
        "the dataset has " + std::to_string(dataset_samples) +
        " samples, fewer than num_canonical_nodes = " + std::to_string(c) +
        ": a canonical node would be empty and have nothing to pad with; lower "
        "num_canonical_nodes or set drop_last");
  }
  p.skipped_ = resume_from / c;
  if (options.drop_last) {
    const uint64_t shortest = dataset_samples / c;
    p.rounds_ = shortest > p.skipped_ ? (shortest - p.skipped_) / p.unit_ : 0;
  } else {
    const uint64_t longest = dataset_samples / c + (dataset_samples % c != 0 ? 1 : 0);
    p.rounds_ = longest > p.skipped_ ? (longest - p.skipped_ + p.unit_ - 1) / p.unit_ : 0;
  }
  return p;
}

CanonicalPosition Partition::Global(uint64_t i) const {
  const uint64_t round = i / world_batch_;
  const uint64_t offset = i % world_batch_;
  return {static_cast<uint32_t>(offset / unit_), skipped_ + round * unit_ + offset % unit_};
}

CanonicalPosition Partition::OfWorker(const WorkerId& id, uint64_t j) const {
  const uint64_t round = j / batch_size_;
  const uint64_t batch = uint64_t{id.worker} * world_.ranks_per_node + id.rank;
  const uint64_t offset = batch * batch_size_ + j % batch_size_;  // in the node's slice
  const uint32_t first = id.node * (canonical_nodes_ / world_.nodes);
  return {first + static_cast<uint32_t>(offset / unit_), skipped_ + round * unit_ + offset % unit_};
}

Partition::Run Partition::WorkerRun(const WorkerId& id, uint64_t j) const {
  const uint64_t in_batch = j % batch_size_;
  const uint64_t batch = uint64_t{id.worker} * world_.ranks_per_node + id.rank;
  const uint64_t offset = batch * batch_size_ + in_batch;
  const uint64_t in_unit = offset % unit_;
  const uint32_t first = id.node * (canonical_nodes_ / world_.nodes);
  return {
      {first + static_cast<uint32_t>(offset / unit_), skipped_ + j / batch_size_ * unit_ + in_unit},
      std::min(batch_size_ - in_batch, unit_ - in_unit)};
}

uint32_t Partition::NodesPerBatch(const WorkerId& id) const {
  const uint64_t begin = (uint64_t{id.worker} * world_.ranks_per_node + id.rank) * batch_size_;
  return static_cast<uint32_t>((begin + batch_size_ - 1) / unit_ - begin / unit_ + 1);
}

}  // namespace ferry::internal_order
