// SampleBlock and BlockCache: the unit of lazy shuffling and the small LRU that makes sequential
// walks cheap.
//
// The block shuffles (py1s, py1b, py1br, py1e) compute a canonical node's order one block at a
// time: a block is a run [begin, end) of positions in the canonical sequence with the sample ids
// found there. A cursor walking its sequence touches, per canonical node, one block for a long
// time, so keeping the last few blocks makes every step O(1) amortized; a miss rebuilds a block
// from its seed, so evicting one only costs time, never correctness.
//
// BlockCache keeps blocks most recently used first. It evicts the least recently used while it
// holds more than `max_bytes`, but always keeps `min_blocks`: a worker whose batches span k
// canonical nodes needs k blocks at once, and evicting below that would rebuild a block on
// every step.
//
// Lookups check the most recent block first (a walk stays in one block for a while), then find
// the block by (node, position) in an ordered index: O(log blocks) even for a cache shared by
// random accesses over many small blocks (py1s pieces).
//
// Thread-safety: a BlockCache is used by one thread (or under its owner's mutex); blocks are
// immutable and shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace ferry::internal_order {

struct SampleBlock {
  uint32_t canonical = 0;  // the canonical node
  uint64_t index = 0;      // the algorithm's number for the block within the node
  uint64_t begin = 0;      // the canonical position of samples[0]
  std::vector<uint64_t> samples;

  uint64_t end() const { return begin + samples.size(); }
  bool Contains(uint32_t c, uint64_t pos) const {
    return c == canonical && pos >= begin && pos - begin < samples.size();
  }
  uint64_t At(uint64_t pos) const { return samples[pos - begin]; }
  size_t bytes() const { return sizeof(SampleBlock) + samples.capacity() * sizeof(uint64_t); }
};

class BlockCache {
 public:
  BlockCache(size_t min_blocks, size_t max_bytes)
      : min_blocks_(min_blocks < 1 ? 1 : min_blocks), max_bytes_(max_bytes) {}

  /// The block holding position `pos` of canonical node `c`, made the most recent; or null.
  const SampleBlock* Find(uint32_t c, uint64_t pos);
  /// The most recently used block of canonical node `c` (a hint for finding its neighbour), or
  /// null.
  const SampleBlock* Latest(uint32_t c) const;
  /// Adds `block` as the most recent and evicts what no longer fits.
  void Insert(std::shared_ptr<const SampleBlock> block);

  size_t size() const { return blocks_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  using List = std::list<std::shared_ptr<const SampleBlock>>;

  void Erase(List::iterator it);

  const size_t min_blocks_;
  const size_t max_bytes_;
  size_t bytes_ = 0;
  List blocks_;  // most recent first
  // (node, begin) -> its place in blocks_; the blocks of one node never overlap.
  std::map<std::pair<uint32_t, uint64_t>, List::iterator> index_;
};

}  // namespace ferry::internal_order
