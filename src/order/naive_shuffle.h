// The `naive` order: each canonical node's samples in a uniformly shuffled order, with no regard
// for shards (so every sample may need a different shard: the worst case for downloads, and the
// reference for shuffle quality). Lazily: position pos of node c is the image of pos under a
// FeistelPermutation of [0, SpanLength(c)) keyed by the node, so nothing is materialized and any
// position costs O(1) (a few mixes and one binary search over the shards).
//
// Thread-safety: immutable.
#pragma once

#include <cstdint>
#include <memory>

#include "order/canonical_order.h"

namespace ferry::internal_order {

std::unique_ptr<const CanonicalOrder> MakeNaiveOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                     uint64_t epoch_key);

}  // namespace ferry::internal_order
