// StreamInterleave: a seeded random interleaving of S sequences (sequence s has counts[s]
// items) that keeps each sequence in its own order: slot t of the merged sequence holds item k
// of some sequence s, and the slots of one sequence hold its items 0, 1, 2, ... from left to
// right. BatchComposition uses it to interleave the streams' batches (a stream's batches keep
// their order, and so the stream's shard locality).
//
// A uniformly random interleaving would need the whole sequence (or rank structures over it) to
// say which item slot t holds. Instead the slots are cut into blocks of K (K grows with the
// total so that there are at most about kTargetBlocks blocks): each block gets each sequence's
// share of it, apportioned from what the sequences have left (largest remainders, ties to the
// lower sequence), and its slots are a uniformly random arrangement of that multiset, drawn
// from the block's own key when first needed. So a total of at most K slots is one uniformly
// random interleaving; a longer one holds the sequences in their proportions (within one)
// in every block. A lookup is O(1) with its block at hand and O(K + S) to build a block.
//
// Lanes: the same counts interleaved independently, each lane with its own block keys (one per
// physical node with device_per_stream); the apportionment is shared.
//
// Memory: (blocks + 1) x S counts, plus the blocks that callers keep (8 bytes per slot).
// Thread-safety: immutable after Make; a Cache is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ferry/result.h"

namespace ferry::internal_order {

class StreamInterleave {
 public:
  /// Blocks of at least this many slots: a total up to it is one uniform interleaving.
  static constexpr uint64_t kMinBlock = 4096;
  static constexpr uint64_t kTargetBlocks = 4096;

  struct Block;
  /// What a caller keeps between lookups: the block it used last.
  using Cache = std::shared_ptr<const Block>;

  struct Item {
    uint32_t sequence = 0;
    uint64_t index = 0;  // within the sequence
    friend bool operator==(const Item&, const Item&) = default;
  };

  /// kInvalidArgument for more than 2^24 sequences or counts adding up past 2^52.
  static Result<StreamInterleave> Make(std::vector<uint64_t> counts, uint64_t key);

  /// Slots in all: the sum of the counts.
  uint64_t size() const { return total_; }
  uint64_t block_size() const { return block_; }

  /// What slot t of lane `lane` holds. `cache` (may be null) holds the block used last and
  /// receives the one used now. \pre t < size().
  Item At(uint32_t lane, uint64_t t, Cache* cache) const;

 private:
  StreamInterleave() = default;
  std::shared_ptr<const Block> MakeBlock(uint32_t lane, uint64_t j) const;
  /// Items of sequence s in the blocks before block j.
  uint64_t Before(uint64_t j, uint32_t s) const { return before_[j * counts_.size() + s]; }

  std::vector<uint64_t> counts_;
  uint64_t key_ = 0;
  uint64_t total_ = 0;
  uint64_t block_ = kMinBlock;    // K
  std::vector<uint64_t> before_;  // (blocks + 1) x S, row j: items of each sequence before block j
};

}  // namespace ferry::internal_order
