#include "order/canonical_order.h"

#include <cassert>
#include <utility>

#include "order/block_shuffle.h"
#include "order/naive_shuffle.h"
#include "order/py1e_shuffle.h"

namespace ferry::internal_order {
namespace {

// Without shuffle: shard order then sample order. The spans are in dataset order, so position
// pos of node c is sample SpanBegin(c) + pos.
class Sequential final : public CanonicalOrder {
 public:
  explicit Sequential(std::shared_ptr<const CanonicalSpans> spans) : spans_(std::move(spans)) {
    assert(spans_->identity_order());
  }

  uint64_t SampleAt(uint32_t c, uint64_t pos, BlockCache* /*cache*/) const override {
    return spans_->SpanBegin(c) + pos;
  }

 private:
  const std::shared_ptr<const CanonicalSpans> spans_;
};

}  // namespace

std::unique_ptr<const CanonicalOrder> MakeCanonicalOrder(
    std::shared_ptr<const CanonicalSpans> spans, const OrderOptions& options, uint64_t epoch) {
  if (!options.shuffle) return std::make_unique<Sequential>(std::move(spans));
  const uint64_t key = EpochKey(options.seed, epoch);
  switch (options.algo) {
    case ShuffleAlgo::kNaive:
      return MakeNaiveOrder(std::move(spans), key);
    case ShuffleAlgo::kPy1s:
      return MakePy1sOrder(std::move(spans), key);
    case ShuffleAlgo::kPy1b:
      return MakePy1bOrder(std::move(spans), key, options.shuffle_block_size);
    case ShuffleAlgo::kPy1br:
      return MakePy1brOrder(std::move(spans), key, options.shuffle_block_size);
    case ShuffleAlgo::kPy1e:
      return MakePy1eOrder(std::move(spans), key, options.shuffle_block_size);
  }
  return nullptr;
}

}  // namespace ferry::internal_order
