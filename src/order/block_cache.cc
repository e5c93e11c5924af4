#include "order/block_cache.h"

#include <utility>

namespace ferry::internal_order {

const SampleBlock* BlockCache::Find(uint32_t c, uint64_t pos) {
  if (blocks_.empty()) return nullptr;
  if (blocks_.front()->Contains(c, pos)) return blocks_.front().get();
  auto it = index_.upper_bound({c, pos});
  if (it == index_.begin()) return nullptr;
  --it;
  if (!(*it->second)->Contains(c, pos)) return nullptr;
  blocks_.splice(blocks_.begin(), blocks_, it->second);
  return blocks_.front().get();
}

const SampleBlock* BlockCache::Latest(uint32_t c) const {
  for (const auto& block : blocks_) {
    if (block->canonical == c) return block.get();
  }
  return nullptr;
}

void BlockCache::Erase(List::iterator it) {
  bytes_ -= (*it)->bytes();
  index_.erase({(*it)->canonical, (*it)->begin});
  blocks_.erase(it);
}

void BlockCache::Insert(std::shared_ptr<const SampleBlock> block) {
  const std::pair<uint32_t, uint64_t> key{block->canonical, block->begin};
  if (const auto old = index_.find(key); old != index_.end()) Erase(old->second);
  bytes_ += block->bytes();
  blocks_.push_front(std::move(block));
  index_.emplace(key, blocks_.begin());
  while (blocks_.size() > min_blocks_ && bytes_ > max_bytes_) Erase(std::prev(blocks_.end()));
}

}  // namespace ferry::internal_order
