#include "order/py1e_shuffle.h"

#include <algorithm>
#include <cassert>
#include <utility>
#include <vector>

#include "base/int128.h"

namespace ferry::internal_order {
namespace {

constexpr uint64_t kMinGrid = uint64_t{1} << 10;
constexpr uint64_t kMaxGrid = uint64_t{1} << 20;

class Py1e final : public CanonicalOrder {
 public:
  Py1e(std::shared_ptr<const CanonicalSpans> spans, uint64_t epoch_key, uint64_t block_size)
      : spans_(std::move(spans)),
        epoch_key_(epoch_key),
        chunk_(std::max<uint64_t>(1, block_size / 2)),
        min_window_(block_size - block_size / 4),
        max_window_(block_size + block_size / 4),
        grid_(std::clamp(block_size, kMinGrid, kMaxGrid)) {}

  uint64_t SampleAt(uint32_t c, uint64_t pos, BlockCache* cache) const override {
    return SampleFromBlocks(c, pos, cache,
                            [&](const SampleBlock* hint) { return FindBlock(c, pos, hint); });
  }

 private:
  struct Node {
    uint32_t c = 0;
    uint64_t begin = 0;  // in the concatenation
    uint64_t length = 0;
    uint64_t sample_key = 0;
    uint64_t window_key = 0;
  };

  struct Window {
    uint64_t lo = 0;
    uint64_t hi = 0;
  };

  // One sample that lands in the block being built.
  struct Entry {
    uint64_t frac;    // fractional part of its position
    uint64_t sample;  // its id
    uint32_t slot;    // integer part, relative to the block's first slot
  };

  Node NodeOf(uint32_t c) const {
    const uint64_t key = NodeKey(epoch_key_, ShuffleAlgo::kPy1e, c);
    return {c, spans_->SpanBegin(c), spans_->SpanLength(c), DeriveKey(key, 1), DeriveKey(key, 2)};
  }

  // Step 2: the window of chunk [begin, end).
  Window WindowOf(const Node& node, uint64_t begin, uint64_t end) const {
    Rng rng(DeriveKey(node.window_key, begin));
    const uint64_t size = end - begin;
    const uint64_t width = std::max(size, rng.Between(min_window_, max_window_));
    const uint64_t before = (width - size) / 2;
    return {begin > before ? begin - before : 0, std::min(node.length, begin - before + width)};
  }

  // Calls visit(sample, slot, frac) for every y in [y0, y1) of the node, in order of y.
  template <typename Visit>
  void Scan(const Node& node, uint64_t y0, uint64_t y1, Visit&& visit) const {
    if (y0 >= y1) return;
    const uint64_t node_end = node.begin + node.length;
    uint64_t y = y0;
    for (uint32_t k = spans_->PieceAt(node.begin + y0); y < y1; ++k) {
      const uint64_t piece_begin = std::max(spans_->OrderedBegin(k), node.begin) - node.begin;
      const uint64_t piece_end = std::min(spans_->OrderedBegin(k + 1), node_end) - node.begin;
      if (piece_end <= piece_begin) continue;  // an empty shard
      // Sample ids run consecutively inside a piece (modular arithmetic: base may wrap).
      const uint64_t base = spans_->SampleOf(k, node.begin + piece_begin) - piece_begin;
      while (y < piece_end && y < y1) {
        const uint64_t chunk_begin = piece_begin + (y - piece_begin) / chunk_ * chunk_;
        const uint64_t chunk_end = std::min(piece_end, chunk_begin + chunk_);
        const Window window = WindowOf(node, chunk_begin, chunk_end);
        const uint64_t width = window.hi - window.lo;
        for (const uint64_t stop = std::min(chunk_end, y1); y < stop; ++y) {
          const UInt128 position = static_cast<UInt128>(StreamValue(node.sample_key, y)) * width;
          visit(base + y, window.lo + static_cast<uint64_t>(position >> 64),
                static_cast<uint64_t>(position));
        }
      }
    }
  }

  // Output block k: the samples with slots in [k*G, (k+1)*G), in order of position.
  std::shared_ptr<const SampleBlock> Build(const Node& node, uint64_t k) const {
    const uint64_t t0 = k * grid_;
    const uint64_t t1 = std::min(node.length, t0 + grid_);
    const uint64_t y0 = t0 > max_window_ ? t0 - max_window_ : 0;
    const uint64_t y1 = std::min(node.length, t1 + max_window_);
    // Every y below y0 has its slot below t0 (slot < y + D), so it precedes the block.
    uint64_t before = y0;
    std::vector<Entry> entries;
    entries.reserve(t1 - t0 + (t1 - t0) / 8 + 16);
    Scan(node, y0, y1, [&](uint64_t sample, uint64_t slot, uint64_t frac) {
      if (slot < t0) {
        ++before;
      } else if (slot < t1) {
        entries.push_back({frac, sample, static_cast<uint32_t>(slot - t0)});
      }
    });

    // Counting sort by slot (about one sample per slot), then order each slot's few samples.
    std::vector<uint32_t> starts(t1 - t0 + 1, 0);
    for (const Entry& e : entries) ++starts[e.slot + 1];
    for (size_t s = 1; s < starts.size(); ++s) starts[s] += starts[s - 1];
    std::vector<Entry> sorted(entries.size());
    {
      std::vector<uint32_t> next(starts.begin(), starts.end() - 1);
      for (const Entry& e : entries) sorted[next[e.slot]++] = e;
    }
    for (size_t s = 0; s + 1 < starts.size(); ++s) {
      if (starts[s + 1] - starts[s] > 1) {
        std::sort(sorted.begin() + starts[s], sorted.begin() + starts[s + 1],
                  [](const Entry& a, const Entry& b) {
                    return a.frac != b.frac ? a.frac < b.frac : a.sample < b.sample;
                  });
      }
    }

    auto block = std::make_shared<SampleBlock>();
    block->canonical = node.c;
    block->index = k;
    block->begin = before;
    block->samples.reserve(sorted.size());
    for (const Entry& e : sorted) block->samples.push_back(e.sample);
    return block;
  }

  std::shared_ptr<const SampleBlock> FindBlock(uint32_t c, uint64_t pos,
                                               const SampleBlock* hint) const {
    const Node node = NodeOf(c);
    assert(pos < node.length);
    const uint64_t blocks = (node.length + grid_ - 1) / grid_;
    // A block starts within about D of k*G; next to the latest block, count from it instead
    // (a walk moves to the next block, often at exactly its end).
    uint64_t k = pos / grid_;
    if (hint != nullptr && pos >= hint->end() && pos - hint->end() < grid_) {
      k = hint->index + 1;
    } else if (hint != nullptr && pos < hint->begin && hint->begin - pos <= grid_) {
      k = hint->index > 0 ? hint->index - 1 : 0;
    }
    k = std::min(k, blocks - 1);
    for (;;) {
      std::shared_ptr<const SampleBlock> block = Build(node, k);
      if (pos < block->begin) {
        assert(k > 0);
        --k;
      } else if (pos >= block->end()) {
        assert(k + 1 < blocks);
        ++k;
      } else {
        return block;
      }
    }
  }

  const std::shared_ptr<const CanonicalSpans> spans_;
  const uint64_t epoch_key_;
  const uint64_t chunk_;       // H
  const uint64_t min_window_;  // bs - bs/4
  const uint64_t max_window_;  // D = bs + bs/4: no window is wider
  const uint64_t grid_;        // G
};

}  // namespace

std::unique_ptr<const CanonicalOrder> MakePy1eOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                    uint64_t epoch_key, uint64_t block_size) {
  return std::make_unique<Py1e>(std::move(spans), epoch_key, block_size);
}

}  // namespace ferry::internal_order
