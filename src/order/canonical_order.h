// CanonicalOrder: the order of the samples inside each canonical node (EpochPlan model, step 2),
// one implementation per shuffle algorithm. Position `pos` of canonical node c's sequence maps to
// a sample id; the sequence is a permutation of the samples of span c (CanonicalSpans), and depends
// only on the spans, the algorithm, the seed, the epoch and c - never on the world shape, which is
// what lets a job resume on another number of nodes.
//
// Keys: every random choice of node c is drawn from NodeKey(base, algorithm, c), where base mixes
// the seed and the epoch; blocks and samples derive theirs from that (order/random.h).
//
// Thread-safety: implementations are immutable; SampleAt is safe from many threads as long as
// each passes its own cache (or none).
#pragma once

#include <cstdint>
#include <memory>

#include "ferry/order/epoch_plan.h"
#include "order/block_cache.h"
#include "order/canonical_spans.h"
#include "order/random.h"

namespace ferry::internal_order {

class CanonicalOrder {
 public:
  virtual ~CanonicalOrder() = default;

  /// The sample at position `pos` of canonical node `c`. `cache` (may be null) holds the blocks
  /// already computed and receives the ones computed now. \pre pos < SpanLength(c).
  virtual uint64_t SampleAt(uint32_t c, uint64_t pos, BlockCache* cache) const = 0;
};

/// Blocks larger than this (in samples) are never materialized: a block of that size would take
/// 32 MiB, so past it the permutation is computed per sample (FeistelPermutation) instead.
inline constexpr uint64_t kMaxDenseBlock = uint64_t{1} << 22;

/// The key of canonical node c's random choices for one algorithm.
inline uint64_t NodeKey(uint64_t base, ShuffleAlgo algo, uint32_t c) {
  return DeriveKey(DeriveKey(base, 0x616c676f00 + static_cast<uint64_t>(algo)), c);
}

/// The seed-and-epoch key every shuffle starts from.
inline uint64_t EpochKey(uint64_t seed, uint64_t epoch) {
  return DeriveKey(Mix64(seed ^ 0x6665727279), epoch);
}

/// The order of `options.algo` (or shard order, then sample order, without `options.shuffle`).
/// \pre the spans were cut with the shard order of the same options and epoch.
std::unique_ptr<const CanonicalOrder> MakeCanonicalOrder(
    std::shared_ptr<const CanonicalSpans> spans, const OrderOptions& options, uint64_t epoch);

/// The common path of the block shuffles: the cached block holding `pos`, else `make(hint)`
/// (hint: the latest block of node c, or null), which is then cached.
template <typename MakeBlock>
uint64_t SampleFromBlocks(uint32_t c, uint64_t pos, BlockCache* cache, MakeBlock&& make) {
  if (cache != nullptr) {
    if (const SampleBlock* block = cache->Find(c, pos)) return block->At(pos);
  }
  std::shared_ptr<const SampleBlock> block = make(cache ? cache->Latest(c) : nullptr);
  const uint64_t sample = block->At(pos);
  if (cache != nullptr) cache->Insert(std::move(block));
  return sample;
}

}  // namespace ferry::internal_order
