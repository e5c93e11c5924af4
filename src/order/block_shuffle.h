// The block shuffles: each canonical node's sequence is cut into consecutive ranges of positions,
// and each range is permuted within itself (Fisher-Yates, seeded by the node and the range). The
// span's samples stay in shard order between ranges, so a range only ever holds samples of the
// few shards it covers: this is what keeps downloads local.
//
//   py1s   a range is a piece (the part of one shard in the span): the shard order is already
//          shuffled, so this shuffles shards, then samples inside each shard.
//   py1b   fixed ranges of `shuffle_block_size` positions, [k*bs, (k+1)*bs), the last one short.
//   py1br  ranges of random sizes around bs, lazily: boundary k (k >= 1) sits at
//          k*bs + phase + jitter_k, with phase uniform in [-bs/2, bs/2] per canonical node and
//          jitter_k uniform in [-bs/8, bs/8] per boundary. Interior ranges so measure between
//          0.75 and 1.25 bs; the first absorbs the phase (0.375 to 1.625 bs). The phase keeps the
//          canonical nodes from crossing range boundaries - and so starting new shards - in step,
//          which spreads downloads over time; any boundary is computed from its own seed, so
//          finding the range of a position costs O(1) without storing boundaries.
//
// A range of at most kMaxDenseBlock samples is materialized as a SampleBlock (8 bytes a sample)
// and cached by the caller; a larger one (a huge shard under py1s, or bs > 4 Mi) is permuted per
// sample with a FeistelPermutation, so memory stays bounded whatever the sizes.
//
// Thread-safety: immutable.
#pragma once

#include <cstdint>
#include <memory>

#include "order/canonical_order.h"

namespace ferry::internal_order {

std::unique_ptr<const CanonicalOrder> MakePy1sOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                    uint64_t epoch_key);
/// \pre block_size >= 1.
std::unique_ptr<const CanonicalOrder> MakePy1bOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                    uint64_t epoch_key, uint64_t block_size);
/// \pre block_size >= 1.
std::unique_ptr<const CanonicalOrder> MakePy1brOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                     uint64_t epoch_key, uint64_t block_size);

}  // namespace ferry::internal_order
