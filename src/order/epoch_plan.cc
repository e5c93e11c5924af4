// EpochPlan: binds the three parts of the model (include/ferry/order/epoch_plan.h) together:
// CanonicalSpans (which samples each canonical node holds), a CanonicalOrder (their order in the
// node) and a Partition (the interleaving, padding across ranks, and the deal). A plan stores
// only per-shard arrays; a sample's place is computed on demand, with the shuffle blocks that a
// cursor touches kept in its own small cache.
#include "ferry/order/epoch_plan.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "order/batch_composition.h"
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

// One stream's own order (steps 1-3 over its shards), for a composed order.
struct StreamOrder {
  uint64_t first_sample = 0;               // the plan's id of the stream's sample 0
  internal_order::Partition interleaving;  // of one rank: Global(q) is position q of the order
  std::shared_ptr<const internal_order::CanonicalSpans> spans;
  std::unique_ptr<const internal_order::CanonicalOrder> order;
};

// The streams' own orders (model steps 1-3 per stream) for a composed order (step 5).
Result<std::vector<StreamOrder>> MakeStreamOrders(const std::vector<uint64_t>& shard_samples,
                                                  const std::vector<StreamShards>& streams,
                                                  const OrderOptions& options,
                                                  uint32_t canonical_nodes, uint64_t epoch) {
  std::vector<StreamOrder> out;
  size_t shard = 0;
  uint64_t first = 0;
  for (size_t s = 0; s < streams.size(); ++s) {
    const auto begin = shard_samples.begin() + static_cast<std::ptrdiff_t>(shard);
    std::vector<uint64_t> own_shards(begin, begin + static_cast<std::ptrdiff_t>(streams[s].shards));
    shard += streams[s].shards;
    OrderOptions own = options;
    own.num_canonical_nodes = canonical_nodes;
    own.batch_size = 1;
    own.drop_last = false;
    own.batching = BatchingMethod::kRandom;
    // Stream 0 keeps the seed, so that one stream is ordered as the random order orders it;
    // the others draw their own.
    if (s > 0) own.seed = internal_order::DeriveKey(options.seed, 0x73747265616d + s);
    // Mosaic's scaling: the streams advance side by side, so their blocks together stay about
    // the size asked for (and so does the cache they keep in use).
    own.shuffle_block_size = std::max<uint64_t>(
        1, static_cast<uint64_t>(static_cast<double>(options.shuffle_block_size) *
                                 std::clamp(streams[s].proportion, 0.0, 1.0)));
    StreamOrder order;
    order.first_sample = first;
    const uint64_t samples = std::accumulate(own_shards.begin(), own_shards.end(), uint64_t{0});
    first += samples;
    FERRY_ASSIGN_OR_RETURN(order.interleaving,
                           internal_order::Partition::Make({}, own, samples, 0));
    std::optional<uint64_t> shard_order_key;
    if (own.shuffle) shard_order_key = internal_order::DeriveKey(own.seed, 0x7368617264);
    FERRY_ASSIGN_OR_RETURN(
        order.spans, internal_order::CanonicalSpans::Make(std::move(own_shards), canonical_nodes,
                                                          shard_order_key));
    order.order = internal_order::MakeCanonicalOrder(order.spans, own, epoch);
    out.push_back(std::move(order));
  }
  return out;
}

}  // namespace

namespace internal_order {

// A cursor's private state: the shuffle blocks it computed last (of each stream's own order
// too, and the streams' interleaving, under a batching method other than random).
struct CursorScratch {
  CursorScratch(size_t working_set, size_t streams) : blocks(working_set, kCacheBytes) {
    for (size_t s = 0; s < streams; ++s) {
      stream_blocks.emplace_back(working_set, kCacheBytes / streams);
    }
  }

  BlockCache blocks;
  std::vector<BlockCache> stream_blocks;
  BatchComposition::Cache batches;
};

}  // namespace internal_order

struct EpochPlan::Impl {
  Impl() : cache(1, kCacheBytes) {}

  uint64_t Sample(CanonicalPosition p, BlockCache* blocks) const {
    assert(p.position < spans->SpanLength(p.node));
    return order->SampleAt(p.node, p.position, blocks);
  }

  uint64_t SharedSample(CanonicalPosition p) const {
    MutexLock lock(mu);
    return Sample(p, &cache);
  }

  // The sample at padded position i of a composed order.
  uint64_t ComposedSample(uint64_t i, internal_order::CursorScratch* scratch) const {
    const internal_order::StreamPosition at =
        composition->At(partition.Source(i), &scratch->batches);
    const StreamOrder& stream = streams[at.stream];
    const CanonicalPosition p = stream.interleaving.Global(at.position);
    return stream.first_sample +
           stream.order->SampleAt(p.node, p.position, &scratch->stream_blocks[at.stream]);
  }

  uint64_t SharedComposedSample(uint64_t i) const {
    MutexLock lock(mu);
    if (!shared_scratch) {
      shared_scratch =
          std::make_unique<internal_order::CursorScratch>(stream_working_set, streams.size());
    }
    return ComposedSample(i, shared_scratch.get());
  }

  uint64_t GlobalSample(uint64_t i) const {
    return composition ? SharedComposedSample(i) : SharedSample(partition.Global(i));
  }

  WorldShape world;
  internal_order::Partition partition;
  std::shared_ptr<const internal_order::CanonicalSpans> spans;
  std::unique_ptr<const internal_order::CanonicalOrder> order;
  // Set with a batching method other than random: the order is composed from the streams' own.
  std::optional<internal_order::BatchComposition> composition;
  std::vector<StreamOrder> streams;
  size_t stream_working_set = 1;  // blocks a cursor keeps per stream
  mutable Mutex mu;
  mutable BlockCache cache GUARDED_BY(mu);
  mutable std::unique_ptr<internal_order::CursorScratch> shared_scratch GUARDED_BY(mu);
};

Result<std::shared_ptr<const EpochPlan>> EpochPlan::Create(std::vector<uint64_t> shard_samples,
                                                           const OrderOptions& options,
                                                           const WorldShape& world, uint64_t epoch,
                                                           uint64_t resume_from,
                                                           std::vector<StreamShards> streams) {
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
  if (options.batching != BatchingMethod::kRandom) {
    if (streams.empty()) streams.push_back({.shards = shard_samples.size(), .proportion = 1});
    uint64_t grouped = 0;
    for (const StreamShards& s : streams) grouped += s.shards;
    if (grouped != shard_samples.size()) {
      return InvalidArgumentError("the streams own " + std::to_string(grouped) +
                                  " shards together, but the plan has " +
                                  std::to_string(shard_samples.size()));
    }
    const uint32_t canonical_nodes = partition.num_canonical_nodes();
    FERRY_ASSIGN_OR_RETURN(
        impl->streams, MakeStreamOrders(shard_samples, streams, options, canonical_nodes, epoch));
    std::vector<uint64_t> stream_samples;
    std::vector<double> proportions;
    for (size_t s = 0; s < streams.size(); ++s) {
      stream_samples.push_back(impl->streams[s].spans->total_samples());
      proportions.push_back(streams[s].proportion);
    }
    // Which stream each batch draws from changes every epoch when shuffling, as Mosaic's does.
    const uint64_t key = internal_order::DeriveKey(
        internal_order::EpochKey(options.seed, options.shuffle ? epoch : 0), 0x6261746368);
    FERRY_ASSIGN_OR_RETURN(impl->composition, internal_order::BatchComposition::Make(
                                                  options.batching, stream_samples, proportions,
                                                  world, options.batch_size, key));
    // Resumption restarts at a whole global batch (Mosaic's rule), so that every batch keeps
    // the composition the method gives it.
    const uint64_t global_batch = impl->composition->global_batch();
    FERRY_ASSIGN_OR_RETURN(
        partition, internal_order::Partition::Make(world, options, impl->composition->samples(),
                                                   resume_from / global_batch * global_batch));
    impl->stream_working_set = std::min<size_t>(options.batch_size, canonical_nodes) + 1;
  }
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
  // A composed plan reads each stream's own order instead.
  if (!impl->composition)
    impl->order = internal_order::MakeCanonicalOrder(impl->spans, options, epoch);

  std::shared_ptr<EpochPlan> plan(new EpochPlan());
  plan->impl_ = std::move(impl);
  return std::shared_ptr<const EpochPlan>(std::move(plan));
}

uint64_t EpochPlan::dataset_samples() const { return impl_->spans->total_samples(); }
uint64_t EpochPlan::epoch_samples() const { return impl_->partition.epoch_samples(); }
uint64_t EpochPlan::padding() const { return impl_->partition.padding(); }
uint64_t EpochPlan::samples_per_rank() const { return impl_->partition.samples_per_rank(); }
uint64_t EpochPlan::WorkerSamples(const WorkerId& id) const {
  return impl_->partition.WorkerSamples(id);
}
uint32_t EpochPlan::num_canonical_nodes() const { return impl_->partition.num_canonical_nodes(); }
const WorldShape& EpochPlan::world() const { return impl_->world; }

uint64_t EpochPlan::GlobalSample(uint64_t i) const {
  assert(i < epoch_samples());
  return impl_->GlobalSample(i);
}

uint64_t EpochPlan::WorkerSample(const WorkerId& id, uint64_t j) const {
  assert(j < WorkerSamples(id));
  return impl_->GlobalSample(impl_->partition.Position(id, j));
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
  cursor.total_ = WorkerSamples(id);
  return cursor;
}

std::pair<uint32_t, uint64_t> EpochPlan::Locate(uint64_t sample) const {
  return impl_->spans->Locate(sample);
}

internal_order::CursorScratch& WorkerCursor::scratch() const {
  if (!scratch_.state) {
    // At least one block per canonical node a batch draws from, plus the next one of a node.
    const EpochPlan::Impl& impl = *plan_->impl_;
    scratch_.state = impl.composition ? std::make_shared<internal_order::CursorScratch>(
                                            impl.stream_working_set, impl.streams.size())
                                      : std::make_shared<internal_order::CursorScratch>(
                                            impl.partition.NodesPerBatch() + 1, 0);
  }
  return *scratch_.state;
}

uint64_t WorkerCursor::SampleAt(uint64_t j) const {
  const EpochPlan::Impl& impl = *plan_->impl_;
  if (impl.composition) return impl.ComposedSample(impl.partition.Position(id_, j), &scratch());
  return impl.Sample(impl.partition.OfWorker(id_, j), &scratch().blocks);
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
