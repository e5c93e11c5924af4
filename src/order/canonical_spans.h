// CanonicalSpans: the shards of a dataset in the epoch's shard order, concatenated and cut into
// C contiguous spans of equal sample counts (within one), one per canonical node (EpochPlan model,
// step 1). Span c covers positions [c*N/C, (c+1)*N/C) of the concatenation, so its length is
// floor(N/C) or ceil(N/C), and a shard may straddle two (or, if larger than a span, more) spans.
//
// Positions in the concatenation are mapped back to sample ids (dataset order: shard, then index
// in shard) with one binary search over the shards' prefix sums in shard order. A "piece" is the
// part of one shard inside one span: ordered shard k, clipped to the span.
//
// Memory: 20 bytes per shard (two prefix-sum arrays and the order) and 8 per canonical node,
// nothing per sample.
// Thread-safety: immutable after Make.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ferry/result.h"

namespace ferry::internal_order {

/// A bound on C that keeps the per-node arrays small; Mosaic's default, 64 per node, reaches it
/// at 16,384 nodes.
inline constexpr uint32_t kMaxCanonicalNodes = uint32_t{1} << 20;

class CanonicalSpans {
 public:
  /// The shard order is the dataset's when `shuffle_key` is nullopt, else a Fisher-Yates
  /// permutation keyed by it. kInvalidArgument for more than 2^32 - 2 shards or more than
  /// kMaxCanonicalNodes canonical nodes.
  static Result<std::shared_ptr<const CanonicalSpans>> Make(std::vector<uint64_t> shard_samples,
                                                            uint32_t num_canonical_nodes,
                                                            std::optional<uint64_t> shuffle_key);

  uint64_t total_samples() const { return shard_begin_.back(); }
  uint32_t num_shards() const { return static_cast<uint32_t>(order_.size()); }
  uint32_t num_canonical_nodes() const { return num_canonical_nodes_; }
  /// True when the shard order is the dataset's, so position x holds sample x.
  bool identity_order() const { return identity_; }

  /// Span c: [SpanBegin(c), SpanBegin(c) + SpanLength(c)) in the concatenation. \pre c <= C.
  uint64_t SpanBegin(uint32_t c) const { return span_begin_[c]; }
  uint64_t SpanLength(uint32_t c) const { return span_begin_[c + 1] - span_begin_[c]; }

  /// The index k (in shard order) of the non-empty shard covering position x. \pre x < total.
  uint32_t PieceAt(uint64_t x) const;
  /// Ordered shard k covers [OrderedBegin(k), OrderedBegin(k + 1)) of the concatenation.
  uint64_t OrderedBegin(uint32_t k) const { return ordered_begin_[k]; }
  /// The dataset shard at position k of the shard order.
  uint32_t ShardAt(uint32_t k) const { return order_[k]; }
  /// The sample at position x, given the ordered shard k that covers it.
  uint64_t SampleOf(uint32_t k, uint64_t x) const {
    return shard_begin_[order_[k]] + (x - ordered_begin_[k]);
  }
  /// The sample at position x. \pre x < total.
  uint64_t SampleAt(uint64_t x) const { return SampleOf(PieceAt(x), x); }
  /// out[i] = SampleAt(x + i): one binary search, then a walk over the shards.
  void SamplesInRange(uint64_t x, std::span<uint64_t> out) const;

  /// The dataset shard holding `sample` and the index within it. \pre sample < total.
  std::pair<uint32_t, uint64_t> Locate(uint64_t sample) const;

 private:
  CanonicalSpans() = default;

  uint32_t num_canonical_nodes_ = 1;
  bool identity_ = true;
  std::vector<uint64_t> shard_begin_;    // dataset order, num_shards + 1 entries
  std::vector<uint32_t> order_;          // shard order: order_[k] is a dataset shard
  std::vector<uint64_t> ordered_begin_;  // prefix sums in shard order, num_shards + 1 entries
  std::vector<uint64_t> span_begin_;     // c * N / C for c = 0..C: spares a 128-bit division
};

}  // namespace ferry::internal_order
