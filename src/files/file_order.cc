#include "files/file_order.h"

#include <fmt/format.h>

#include <numeric>
#include <span>

#include "order/random.h"

namespace ferry::internal_files {

std::vector<uint64_t> EpochPermutation(uint64_t num_files, uint64_t epoch,
                                       const FileOrderOptions& options) {
  std::vector<uint64_t> order(num_files);
  std::iota(order.begin(), order.end(), uint64_t{0});
  if (options.shuffle) {
    internal_order::Rng rng(internal_order::DeriveKey(options.seed, epoch));
    internal_order::Shuffle(std::span<uint64_t>(order), rng);
  }
  return order;
}

Result<std::vector<uint64_t>> WorkerFiles(uint64_t num_files, const WorldShape& world,
                                          const WorkerId& worker, uint64_t epoch,
                                          const FileOrderOptions& options) {
  if (world.workers() == 0) {
    return InvalidArgumentError(fmt::format("world {}x{}x{} has no worker", world.nodes,
                                            world.ranks_per_node, world.workers_per_rank));
  }
  if (worker.node >= world.nodes || worker.rank >= world.ranks_per_node ||
      worker.worker >= world.workers_per_rank) {
    return InvalidArgumentError(fmt::format(
        "worker (node {}, rank {}, worker {}) is outside the world {}x{}x{}", worker.node,
        worker.rank, worker.worker, world.nodes, world.ranks_per_node, world.workers_per_rank));
  }
  std::vector<uint64_t> files;
  if (num_files == 0) return files;
  const std::vector<uint64_t> order = EpochPermutation(num_files, epoch, options);
  const uint64_t ranks = uint64_t{world.nodes} * world.ranks_per_node;
  const uint64_t total =
      options.drop_last ? num_files - num_files % ranks : (num_files + ranks - 1) / ranks * ranks;
  const uint64_t rank = uint64_t{worker.node} * world.ranks_per_node + worker.rank;
  const uint64_t workers = world.workers_per_rank;
  // The rank's share is positions rank, rank + ranks, ...; the worker takes every workers-th of
  // them from its own id on.
  const uint64_t step = ranks * workers;
  files.reserve(total / step + 1);
  for (uint64_t p = rank + ranks * worker.worker; p < total; p += step) {
    files.push_back(order[p % num_files]);
  }
  return files;
}

}  // namespace ferry::internal_files
