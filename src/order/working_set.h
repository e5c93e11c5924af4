// WorkingSet: how many bytes of shards the readers of one node need local at once to read an
// epoch's order without fetching a shard twice, and how to narrow a shuffle until they fit.
//
// A shard is "live" from its first use in the epoch to its last; evicting it in between costs a
// second download. The bound, per canonical node (epoch_plan.h, step 2), from how far each
// algorithm moves a sample: the samples read around one position come from the shards that
// overlap a stretch of `w` positions of the span's shard order, plus the shards cut at its two
// ends -
//   no shuffle, py1s   w = 0: one shard at a time (a piece is read whole before the next);
//   py1b               w = bs (one block);
//   py1br              w = 1.625 bs (the first range absorbs the phase);
//   py1e               w = 1.75 bs (a window of up to 1.25 bs centred on a chunk of up to bs/2);
//   naive              w = the span (a permutation of it).
// A stream's live bytes are then at most min(w, its samples) x its bytes per sample + two of its
// largest shards (one when w = 0), and never more than the stream. A node reads the canonical
// nodes c with c % P == its index modulo gcd(C, P) - C / gcd(C, P) of them, which advance in
// step (position j of each, then j + 1) - so a node needs that many times it. It is an upper
// bound, not an average: a mix of streams is counted as if the window held only the stream's
// own samples.
//
// NarrowToFit keeps the order the user asked for when it fits `room` bytes per stream, and
// otherwise picks the largest shuffle_block_size that fits (py1b, py1br, py1e; naive becomes
// py1e over its blocks), or py1s - one shard per canonical node, the least any shuffle needs -
// when no block size does. The result depends only on its inputs, so every rank and worker
// narrows alike and a resumed job narrows as it did before.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ferry/order/epoch_plan.h"

namespace ferry::internal_order {

/// One stream of an epoch as the working set sees it.
struct StreamFootprint {
  uint64_t samples = 0;  // its samples in the epoch
  uint64_t bytes = 0;    // download bytes of the shards they come from (a shard chosen twice: 2x)
  uint64_t max_shard_bytes = 0;
};

struct WorkingSet {
  /// Per stream: the most bytes of its shards that a node's readers use at once.
  std::vector<uint64_t> bytes;

  uint64_t Largest() const;
};

/// The working set of `options`' order over `streams` for `world` (see the file comment).
/// num_canonical_nodes 0 resolves to its default for the world.
WorkingSet EstimateWorkingSet(std::span<const StreamFootprint> streams, const OrderOptions& options,
                              const WorldShape& world);

struct WorkingSetFit {
  OrderOptions order;  // the order to read: as asked, or narrowed
  bool narrowed = false;
  bool fits = true;  // `used` fits the room
  WorkingSet asked;  // of the order as asked
  WorkingSet used;   // of `order`
};

/// `options` when every stream's working set fits `room` bytes, else the widest shuffle that
/// does (see the file comment).
WorkingSetFit NarrowToFit(std::span<const StreamFootprint> streams, const OrderOptions& options,
                          const WorldShape& world, uint64_t room);

}  // namespace ferry::internal_order
