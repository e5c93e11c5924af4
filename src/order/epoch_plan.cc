// EpochPlan: binds the three parts of the model (include/ferry/stream/epoch_plan.h) together:
// CanonicalSpans (which samples each canonical node holds), a CanonicalOrder (their order in the
// node) and a Partition (rounds, padding, and the dealing of rounds to workers). A plan stores
// only per-shard arrays; a sample's place is computed on demand, with the shuffle blocks that a
// cursor touches kept in its own small cache.
#include "ferry/stream/epoch_plan.h"

#include <cassert>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "order/block_cache.h"
#include "order/canonical_order.h"
#include "order/canonical_spans.h"
#include "order/partition.h"

namespace ferry {

using internal_order::BlockCache;
using internal_order::CanonicalPosition;

namespace {

// A cursor keeps the blocks of the canonical nodes its batches draw from, and more while they
// fit in this; GlobalSample shares one cache of this size across callers.
constexpr size_t kCacheBytes = size_t{32} << 20;
constexpr uint64_t kMaxBlockSize = uint64_t{1} << 30;

bool UsesBlockSize(ShuffleAlgo algo) {
  return algo == ShuffleAlgo::kPy1b || algo == ShuffleAlgo::kPy1br || algo == ShuffleAlgo::kPy1e;
}

}  // namespace

namespace internal_order {

// A cursor's private state: its blocks, and the run of consecutive canonical positions that
// holds samples [run_begin, run_end) of its sequence, the first at `first`.
struct CursorScratch {
  explicit CursorScratch(size_t working_set) : blocks(working_set, kCacheBytes) {}

  BlockCache blocks;
  uint64_t run_begin = 0;
  uint64_t run_end = 0;
  CanonicalPosition first;
};

}  // namespace internal_order

struct EpochPlan::Impl {
  Impl() : cache(1, kCacheBytes) {}

  // The sample at a position of the padded sequence of a canonical node: past the node's
  // length, the sequence repeats from its start.
  uint64_t Sample(CanonicalPosition p, BlockCache* blocks) const {
    const uint64_t length = spans->SpanLength(p.node);
    const uint64_t pos = p.position < length ? p.position : p.position % length;
    return order->SampleAt(p.node, pos, blocks);
  }

  uint64_t SharedSample(CanonicalPosition p) const {
    std::lock_guard lock(mu);
    return Sample(p, &cache);
  }

  WorldShape world;
  internal_order::Partition partition;
  std::shared_ptr<const internal_order::CanonicalSpans> spans;
  std::unique_ptr<const internal_order::CanonicalOrder> order;
  mutable std::mutex mu;
  mutable BlockCache cache;  // guarded by mu
};

Result<std::shared_ptr<const EpochPlan>> EpochPlan::Create(std::vector<uint64_t> shard_samples,
                                                           const OrderOptions& options,
                                                           const WorldShape& world, uint64_t epoch,
                                                           uint64_t resume_from) {
  if (options.shuffle) {
    if (ShuffleAlgoName(options.algo) == "unknown") {
      return InvalidArgumentError("shuffle_algo: unknown value " +
                                  std::to_string(static_cast<int>(options.algo)));
    }
    if (UsesBlockSize(options.algo) &&
        (options.shuffle_block_size == 0 || options.shuffle_block_size > kMaxBlockSize)) {
      return InvalidArgumentError(
          "shuffle_block_size = " + std::to_string(options.shuffle_block_size) + " for " +
          std::string(ShuffleAlgoName(options.algo)) + " must be between 1 and 2^30 samples");
    }
  }
  uint64_t total = 0;
  for (const uint64_t n : shard_samples) {
    if (n > std::numeric_limits<uint64_t>::max() / 2 - total) {
      return InvalidArgumentError("the shards' sample counts add up past 2^63");
    }
    total += n;
  }
  FERRY_ASSIGN_OR_RETURN(auto partition,
                         internal_order::Partition::Make(world, options, total, resume_from));

  auto impl = std::make_shared<Impl>();
  impl->world = world;
  impl->partition = partition;
  std::optional<uint64_t> shard_order_key;
  if (options.shuffle) {
    // Keyed by the seed alone, not the epoch: which shards each canonical node (and so each
    // physical node) reads stays the same across epochs, so a node's cache keeps serving it;
    // the order inside each node still changes every epoch (the per-node shuffles are keyed by
    // the epoch). This is Mosaic's choice too.
    shard_order_key = internal_order::DeriveKey(options.seed, 0x7368617264);  // "shard"
  }
  FERRY_ASSIGN_OR_RETURN(
      impl->spans, internal_order::CanonicalSpans::Make(
                       std::move(shard_samples), partition.num_canonical_nodes(), shard_order_key));
  impl->order = internal_order::MakeCanonicalOrder(impl->spans, options, epoch);

  std::shared_ptr<EpochPlan> plan(new EpochPlan());
  plan->impl_ = std::move(impl);
  return std::shared_ptr<const EpochPlan>(std::move(plan));
}

uint64_t EpochPlan::dataset_samples() const { return impl_->spans->total_samples(); }
uint64_t EpochPlan::epoch_samples() const { return impl_->partition.epoch_samples(); }
uint64_t EpochPlan::samples_per_worker() const { return impl_->partition.samples_per_worker(); }
uint32_t EpochPlan::num_canonical_nodes() const { return impl_->partition.num_canonical_nodes(); }
const WorldShape& EpochPlan::world() const { return impl_->world; }

uint64_t EpochPlan::GlobalSample(uint64_t i) const {
  assert(i < epoch_samples());
  return impl_->SharedSample(impl_->partition.Global(i));
}

uint64_t EpochPlan::WorkerSample(const WorkerId& id, uint64_t j) const {
  assert(j < samples_per_worker());
  return impl_->SharedSample(impl_->partition.OfWorker(id, j));
}

Result<WorkerCursor> EpochPlan::Worker(const WorkerId& id) const {
  const WorldShape& w = impl_->world;
  if (id.node >= w.nodes || id.rank >= w.ranks_per_node || id.worker >= w.workers_per_rank) {
    return InvalidArgumentError("worker (node " + std::to_string(id.node) + ", rank " +
                                std::to_string(id.rank) + ", worker " + std::to_string(id.worker) +
                                ") is outside the world of " + std::to_string(w.nodes) +
                                " nodes x " + std::to_string(w.ranks_per_node) + " ranks x " +
                                std::to_string(w.workers_per_rank) + " workers");
  }
  WorkerCursor cursor;
  cursor.plan_ = shared_from_this();
  cursor.id_ = id;
  cursor.total_ = samples_per_worker();
  return cursor;
}

std::pair<uint32_t, uint64_t> EpochPlan::Locate(uint64_t sample) const {
  return impl_->spans->Locate(sample);
}

internal_order::CursorScratch& WorkerCursor::scratch() const {
  if (!scratch_.state) {
    // At least one block per canonical node a batch draws from, plus the next one of a node.
    scratch_.state = std::make_shared<internal_order::CursorScratch>(
        plan_->impl_->partition.NodesPerBatch(id_) + 1);
  }
  return *scratch_.state;
}

uint64_t WorkerCursor::SampleAt(uint64_t j) const {
  internal_order::CursorScratch& s = scratch();
  const EpochPlan::Impl& impl = *plan_->impl_;
  if (j < s.run_begin || j >= s.run_end) {
    const internal_order::Partition::Run run = impl.partition.WorkerRun(id_, j);
    s.run_begin = j;
    s.run_end = j + run.length;
    s.first = run.first;
  }
  return impl.Sample({s.first.node, s.first.position + (j - s.run_begin)}, &s.blocks);
}

std::optional<uint64_t> WorkerCursor::Next() {
  if (taken_ >= total_) return std::nullopt;
  return SampleAt(taken_++);
}

std::optional<uint64_t> WorkerCursor::Peek(uint64_t k) const {
  if (k >= total_ - taken_) return std::nullopt;
  return SampleAt(taken_ + k);
}

uint64_t WorkerCursor::remaining() const { return total_ - taken_; }

}  // namespace ferry
