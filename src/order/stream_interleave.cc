#include "order/stream_interleave.h"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <span>
#include <string>

#include "base/int128.h"
#include "order/random.h"

namespace ferry::internal_order {

// A block's slots, each packed as (sequence << kIndexBits) | index of the item among the
// block's items of that sequence.
struct StreamInterleave::Block {
  static constexpr int kIndexBits = 40;

  uint32_t lane = 0;
  uint64_t index = 0;  // j
  std::vector<uint64_t> slots;
};

namespace {

constexpr uint64_t kMaxSequences = uint64_t{1} << 24;

// Shares `slots` among the sequences in proportion to what each has left (`left`, adding up to
// `total_left` >= slots): floor of the exact share, then one more to the largest remainders.
// Never more than a sequence has left, and the shares add up to `slots` exactly.
void Apportion(uint64_t slots, std::span<const uint64_t> left, uint64_t total_left,
               std::span<uint64_t> share) {
  const size_t n = left.size();
  std::vector<uint64_t> remainder(n);
  uint64_t given = 0;
  for (size_t s = 0; s < n; ++s) {
    const UInt128 exact = static_cast<UInt128>(slots) * left[s];
    share[s] = static_cast<uint64_t>(exact / total_left);
    remainder[s] = static_cast<uint64_t>(exact % total_left);
    given += share[s];
  }
  std::vector<uint32_t> by_remainder(n);
  std::iota(by_remainder.begin(), by_remainder.end(), uint32_t{0});
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [&](uint32_t a, uint32_t b) { return remainder[a] > remainder[b]; });
  // A sequence with a remainder has a share below its exact one, itself at most what it has
  // left: one more still fits. slots - given is below the number of nonzero remainders.
  for (size_t i = 0; given < slots; ++i, ++given) ++share[by_remainder[i]];
}

}  // namespace

Result<StreamInterleave> StreamInterleave::Make(std::vector<uint64_t> counts, uint64_t key) {
  if (counts.size() > kMaxSequences) {
    return InvalidArgumentError(std::to_string(counts.size()) +
                                " sequences to interleave; at most 2^24 are supported");
  }
  StreamInterleave out;
  for (const uint64_t c : counts) {
    // Past it a block would exceed the 2^40 slots an index within it is packed in.
    if (c > (uint64_t{1} << 52) - out.total_) {
      return InvalidArgumentError("the sequences to interleave add up past 2^52 items");
    }
    out.total_ += c;
  }
  out.counts_ = std::move(counts);
  out.key_ = key;
  out.block_ = std::max(kMinBlock, (out.total_ + kTargetBlocks - 1) / kTargetBlocks);
  const size_t n = out.counts_.size();
  const uint64_t blocks = (out.total_ + out.block_ - 1) / out.block_;
  out.before_.assign((blocks + 1) * n, 0);
  std::vector<uint64_t> left = out.counts_;
  std::vector<uint64_t> share(n);
  uint64_t total_left = out.total_;
  for (uint64_t j = 0; j < blocks; ++j) {
    const uint64_t slots = std::min(out.block_, total_left);
    Apportion(slots, left, total_left, share);
    for (size_t s = 0; s < n; ++s) {
      left[s] -= share[s];
      out.before_[(j + 1) * n + s] = out.before_[j * n + s] + share[s];
    }
    total_left -= slots;
  }
  return out;
}

std::shared_ptr<const StreamInterleave::Block> StreamInterleave::MakeBlock(uint32_t lane,
                                                                           uint64_t j) const {
  auto block = std::make_shared<Block>();
  block->lane = lane;
  block->index = j;
  const uint64_t begin = j * block_;
  block->slots.reserve(std::min(block_, total_ - begin));
  for (uint32_t s = 0; s < counts_.size(); ++s) {
    block->slots.insert(block->slots.end(), Before(j + 1, s) - Before(j, s), s);
  }
  assert(block->slots.size() == std::min(block_, total_ - begin));
  Rng rng(DeriveKey(DeriveKey(key_, lane), j));
  Shuffle(std::span<uint64_t>(block->slots), rng);
  std::vector<uint64_t> seen(counts_.size(), 0);
  for (uint64_t& slot : block->slots) slot = (slot << Block::kIndexBits) | seen[slot]++;
  return block;
}

StreamInterleave::Item StreamInterleave::At(uint32_t lane, uint64_t t, Cache* cache) const {
  assert(t < total_);
  const uint64_t j = t / block_;
  std::shared_ptr<const Block> fresh;
  const Block* block = cache != nullptr ? cache->get() : nullptr;
  if (block == nullptr || block->lane != lane || block->index != j) {
    fresh = MakeBlock(lane, j);
    block = fresh.get();
    if (cache != nullptr) *cache = std::move(fresh);
  }
  const uint64_t slot = block->slots[t - j * block_];
  const auto s = static_cast<uint32_t>(slot >> Block::kIndexBits);
  return {s, Before(j, s) + (slot & ((uint64_t{1} << Block::kIndexBits) - 1))};
}

}  // namespace ferry::internal_order
