#include "order/block_shuffle.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "order/feistel_permutation.h"

namespace ferry::internal_order {
namespace {

// Positions [begin, end) of one canonical node, permuted within themselves.
struct Range {
  uint64_t index = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
};

class RangeShuffle : public CanonicalOrder {
 public:
  RangeShuffle(std::shared_ptr<const CanonicalSpans> spans, uint64_t epoch_key, ShuffleAlgo algo)
      : spans_(std::move(spans)), epoch_key_(epoch_key), algo_(algo) {}

  uint64_t SampleAt(uint32_t c, uint64_t pos, BlockCache* cache) const final {
    if (cache != nullptr) {
      if (const SampleBlock* block = cache->Find(c, pos)) return block->At(pos);
    }
    const uint64_t key = NodeKey(epoch_key_, algo_, c);
    const Range range = RangeOf(c, key, pos);
    assert(range.begin <= pos && pos < range.end);
    const uint64_t range_key = DeriveKey(key, range.index);
    const uint64_t span_begin = spans_->SpanBegin(c);
    if (range.end - range.begin > kMaxDenseBlock) {
      const FeistelPermutation permutation(range.end - range.begin, range_key);
      return spans_->SampleAt(span_begin + range.begin + permutation(pos - range.begin));
    }
    auto block = std::make_shared<SampleBlock>();
    block->canonical = c;
    block->index = range.index;
    block->begin = range.begin;
    block->samples.resize(range.end - range.begin);
    spans_->SamplesInRange(span_begin + range.begin, block->samples);
    Rng rng(range_key);
    Shuffle(std::span<uint64_t>(block->samples), rng);
    const uint64_t sample = block->At(pos);
    if (cache != nullptr) cache->Insert(std::move(block));
    return sample;
  }

 protected:
  /// The range of node c holding position pos; `key` is the node's key.
  virtual Range RangeOf(uint32_t c, uint64_t key, uint64_t pos) const = 0;

  const std::shared_ptr<const CanonicalSpans> spans_;

 private:
  const uint64_t epoch_key_;
  const ShuffleAlgo algo_;
};

class Py1s final : public RangeShuffle {
 public:
  Py1s(std::shared_ptr<const CanonicalSpans> spans, uint64_t epoch_key)
      : RangeShuffle(std::move(spans), epoch_key, ShuffleAlgo::kPy1s) {}

 private:
  Range RangeOf(uint32_t c, uint64_t /*key*/, uint64_t pos) const override {
    const uint64_t span_begin = spans_->SpanBegin(c);
    const uint64_t span_end = span_begin + spans_->SpanLength(c);
    const uint32_t k = spans_->PieceAt(span_begin + pos);
    const uint64_t begin = std::max(spans_->OrderedBegin(k), span_begin);
    const uint64_t end = std::min(spans_->OrderedBegin(k + 1), span_end);
    // Numbered by its start, which (unlike k) names the same piece in any world.
    return {begin - span_begin, begin - span_begin, end - span_begin};
  }
};

class Py1b final : public RangeShuffle {
 public:
  Py1b(std::shared_ptr<const CanonicalSpans> spans, uint64_t epoch_key, uint64_t block_size)
      : RangeShuffle(std::move(spans), epoch_key, ShuffleAlgo::kPy1b), block_size_(block_size) {}

 private:
  Range RangeOf(uint32_t c, uint64_t /*key*/, uint64_t pos) const override {
    const uint64_t k = pos / block_size_;
    const uint64_t begin = k * block_size_;
    return {k, begin, std::min(begin + block_size_, spans_->SpanLength(c))};
  }

  const uint64_t block_size_;
};

class Py1br final : public RangeShuffle {
 public:
  Py1br(std::shared_ptr<const CanonicalSpans> spans, uint64_t epoch_key, uint64_t block_size)
      : RangeShuffle(std::move(spans), epoch_key, ShuffleAlgo::kPy1br),
        block_size_(static_cast<int64_t>(block_size)),
        max_phase_(block_size_ / 2),
        max_jitter_(block_size_ / 8) {}

 private:
  // Boundary k of a node whose key is `key`, before clipping to the span: strictly increasing
  // in k, since consecutive boundaries differ by at least bs - 2 * bs/8 > 0.
  int64_t Boundary(uint64_t key, int64_t k) const {
    if (k <= 0) return 0;
    Rng phase_rng(DeriveKey(key, ~uint64_t{0}));
    const int64_t phase = Draw(phase_rng, max_phase_);
    Rng jitter_rng(DeriveKey(key, static_cast<uint64_t>(k)));
    return k * block_size_ + phase + Draw(jitter_rng, max_jitter_);
  }

  // Uniform in [-m, m].
  static int64_t Draw(Rng& rng, int64_t m) {
    return static_cast<int64_t>(rng.Bounded(static_cast<uint64_t>(2 * m + 1))) - m;
  }

  Range RangeOf(uint32_t c, uint64_t key, uint64_t pos) const override {
    const auto p = static_cast<int64_t>(pos);
    // Boundary k is within bs/2 + bs/8 of k*bs, so this guess is off by at most one.
    int64_t k = std::max<int64_t>(0, p / block_size_);
    while (k > 0 && Boundary(key, k) > p) --k;
    while (Boundary(key, k + 1) <= p) ++k;
    const auto length = static_cast<int64_t>(spans_->SpanLength(c));
    return {static_cast<uint64_t>(k), static_cast<uint64_t>(Boundary(key, k)),
            static_cast<uint64_t>(std::min(Boundary(key, k + 1), length))};
  }

  const int64_t block_size_;
  const int64_t max_phase_;
  const int64_t max_jitter_;
};

}  // namespace

std::unique_ptr<const CanonicalOrder> MakePy1sOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                    uint64_t epoch_key) {
  return std::make_unique<Py1s>(std::move(spans), epoch_key);
}

std::unique_ptr<const CanonicalOrder> MakePy1bOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                    uint64_t epoch_key, uint64_t block_size) {
  return std::make_unique<Py1b>(std::move(spans), epoch_key, block_size);
}

std::unique_ptr<const CanonicalOrder> MakePy1brOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                     uint64_t epoch_key, uint64_t block_size) {
  return std::make_unique<Py1br>(std::move(spans), epoch_key, block_size);
}

}  // namespace ferry::internal_order
