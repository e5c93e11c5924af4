#include "order/naive_shuffle.h"

#include <utility>

#include "order/feistel_permutation.h"

namespace ferry::internal_order {
namespace {

class Naive final : public CanonicalOrder {
 public:
  Naive(std::shared_ptr<const CanonicalSpans> spans, uint64_t epoch_key)
      : spans_(std::move(spans)), epoch_key_(epoch_key) {}

  uint64_t SampleAt(uint32_t c, uint64_t pos, BlockCache* /*cache*/) const override {
    const FeistelPermutation permutation(spans_->SpanLength(c),
                                         NodeKey(epoch_key_, ShuffleAlgo::kNaive, c));
    return spans_->SampleAt(spans_->SpanBegin(c) + permutation(pos));
  }

 private:
  const std::shared_ptr<const CanonicalSpans> spans_;
  const uint64_t epoch_key_;
};

}  // namespace

std::unique_ptr<const CanonicalOrder> MakeNaiveOrder(std::shared_ptr<const CanonicalSpans> spans,
                                                     uint64_t epoch_key) {
  return std::make_unique<Naive>(std::move(spans), epoch_key);
}

}  // namespace ferry::internal_order
