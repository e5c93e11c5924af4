// Tests of the cut into canonical spans: equal spans within one, shard order as a permutation,
// position-to-sample mapping (including empty shards) and Locate.
#include "order/canonical_spans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace ferry::internal_order {
namespace {

std::shared_ptr<const CanonicalSpans> Make(std::vector<uint64_t> shards, uint32_t c,
                                           std::optional<uint64_t> key) {
  auto spans = CanonicalSpans::Make(std::move(shards), c, key);
  EXPECT_TRUE(spans.has_value()) << spans.status().ToString();
  return *spans;
}

TEST(CanonicalSpans, SpansAreEqualWithinOne) {
  const auto spans = Make({5, 0, 7, 1, 0, 4}, 4, std::nullopt);
  ASSERT_EQ(spans->total_samples(), 17u);
  uint64_t at = 0;
  for (uint32_t c = 0; c < 4; ++c) {
    EXPECT_EQ(spans->SpanBegin(c), at);
    EXPECT_TRUE(spans->SpanLength(c) == 4 || spans->SpanLength(c) == 5);
    at += spans->SpanLength(c);
  }
  EXPECT_EQ(at, 17u);
  EXPECT_EQ(spans->SpanBegin(4), 17u);
}

TEST(CanonicalSpans, IdentityOrderMapsPositionsToThemselves) {
  const auto spans = Make({5, 0, 7, 1, 0, 4}, 3, std::nullopt);
  EXPECT_TRUE(spans->identity_order());
  for (uint64_t x = 0; x < 17; ++x) EXPECT_EQ(spans->SampleAt(x), x);
  std::vector<uint64_t> out(10);
  spans->SamplesInRange(4, out);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(out[i], 4 + i);
}

TEST(CanonicalSpans, ShuffledOrderKeepsShardsWhole) {
  std::vector<uint64_t> sizes;
  for (uint64_t s = 0; s < 50; ++s) sizes.push_back(s % 7);  // some empty
  const auto spans = Make(sizes, 5, 1234);
  EXPECT_FALSE(spans->identity_order());
  const uint64_t total = spans->total_samples();
  std::vector<uint64_t> all(total);
  spans->SamplesInRange(0, all);
  for (uint64_t x = 0; x < total; ++x) ASSERT_EQ(all[x], spans->SampleAt(x));
  // A permutation of the samples...
  std::vector<uint64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(sorted[i], i);
  // ... in runs of whole shards, each in order.
  for (uint64_t x = 1; x < total; ++x) {
    if (spans->Locate(all[x]).first == spans->Locate(all[x - 1]).first) {
      EXPECT_EQ(all[x], all[x - 1] + 1);
    } else {
      EXPECT_EQ(spans->Locate(all[x]).second, 0u);
    }
  }
  // The shard order is a permutation and not the identity.
  std::vector<uint32_t> order;
  for (uint32_t k = 0; k < spans->num_shards(); ++k) order.push_back(spans->ShardAt(k));
  EXPECT_FALSE(std::is_sorted(order.begin(), order.end()));
  std::sort(order.begin(), order.end());
  for (uint32_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], k);
}

TEST(CanonicalSpans, LocateFindsShardAndIndex) {
  const auto spans = Make({3, 0, 0, 2, 4}, 1, 9);
  EXPECT_EQ(spans->Locate(0), (std::pair<uint32_t, uint64_t>{0, 0}));
  EXPECT_EQ(spans->Locate(2), (std::pair<uint32_t, uint64_t>{0, 2}));
  EXPECT_EQ(spans->Locate(3), (std::pair<uint32_t, uint64_t>{3, 0}));
  EXPECT_EQ(spans->Locate(5), (std::pair<uint32_t, uint64_t>{4, 0}));
  EXPECT_EQ(spans->Locate(8), (std::pair<uint32_t, uint64_t>{4, 3}));
}

TEST(CanonicalSpans, EmptyDatasetAndTooManyNodes) {
  const auto empty = Make({}, 2, 1);
  EXPECT_EQ(empty->total_samples(), 0u);
  EXPECT_EQ(empty->SpanLength(0), 0u);
  const auto tiny = Make({1}, 4, std::nullopt);
  uint64_t nonempty = 0;
  for (uint32_t c = 0; c < 4; ++c) nonempty += tiny->SpanLength(c);
  EXPECT_EQ(nonempty, 1u);
  EXPECT_FALSE(CanonicalSpans::Make({1}, 0, std::nullopt).has_value());
}

}  // namespace
}  // namespace ferry::internal_order
