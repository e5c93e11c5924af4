// The `py1e` order (the default): every sample moves within a window of about
// `shuffle_block_size` (bs) positions around where its shard lies, so the order is well mixed at
// the scale of bs while a stretch of the sequence only needs the few shards near it.
//
// Scheme, per canonical node of length L (positions y = 0..L-1 in the span's shard order):
//   1. Each piece (the part of one shard in the span) is cut into chunks of at most
//      H = max(1, bs/2) samples (a piece smaller than H is one chunk, as in Mosaic's py1e; big
//      shards are cut so that no window grows past about bs).
//   2. Each chunk [a, b) draws a window width w uniform in [bs - bs/4, bs + bs/4], takes
//      max(w, b - a), centres that window on the chunk, and clips it to [0, L).
//   3. Each sample y draws a continuous position uniform in its chunk's window, as the 128-bit
//      product lo * 2^64 + u * width with u = StreamValue(node key, y); its slot is the integer
//      part. The sequence is the samples sorted by position (ties, which need equal 64-bit
//      draws, by sample id).
// A window holds its chunk and is at most D = bs + bs/4 wide, so a sample's slot lies within D
// of y. Hence, lazily: output block k holds the samples with slots in [kG, (k+1)G) (grid G = bs
// clamped to [1 Ki, 1 Mi], a cost knob that does not change the order); it is built by scanning
// y in [kG - D, (k+1)G + D), and it starts at canonical position kG - D + #{scanned y with slot <
// kG}. A block costs O(G + 2D) draws and a counting sort by slot; a sequential walk moves from a
// block to the next, so each sample costs O(1) amortized; a random position is found by guessing
// block pos / G and stepping to a neighbour if the count says so.
//
// Compared with Mosaic's py1e (uniform shifts of a shard's samples, numpy RNG) the windows and
// draws differ, so orders are not bit-identical; the properties (window ~bs, shard locality,
// balanced per-node downloads) are the same.
//
// Thread-safety: immutable.
#pragma once

#include <cstdint>
#include <memory>

#include "order/canonical_order.h"

namespace ferry::internal_order {

/// \pre block_size >= 1.
std::unique_ptr<const CanonicalOrder> MakePy1eOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                    uint64_t epoch_key, uint64_t block_size);

}  // namespace ferry::internal_order
