// Tests of the round and dealing arithmetic: the default C rule, rounds with padding and
// drop_last, resumption offsets, the worker-major deal, and the errors for impossible shapes.
#include "order/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace ferry::internal_order {
namespace {

using ::testing::HasSubstr;

OrderOptions Options(uint32_t batch, uint32_t c = 0, bool drop_last = false) {
  OrderOptions o;
  o.batch_size = batch;
  o.num_canonical_nodes = c;
  o.drop_last = drop_last;
  return o;
}

TEST(DefaultCanonicalNodes, LargestDivisorUpTo64PerNode) {
  // ranks*workers*batch = 8*2*32 = 512: d = 64.
  EXPECT_EQ(DefaultCanonicalNodes({8, 8, 2}, 32, 100'000'000), 512u);
  // 3*5*7 = 105: its largest divisor <= 64 is 35.
  EXPECT_EQ(DefaultCanonicalNodes({2, 3, 5}, 7, 1'000'000), 70u);
  // 1*1*1: d = 1.
  EXPECT_EQ(DefaultCanonicalNodes({4, 1, 1}, 1, 1'000'000), 4u);
  // Capped by the dataset: 2 nodes, 100 = 2*50 per node, but only 30 samples -> d = 10.
  EXPECT_EQ(DefaultCanonicalNodes({2, 10, 1}, 10, 30), 20u);
  // Fewer samples than nodes: C = nodes (the plan then needs drop_last).
  EXPECT_EQ(DefaultCanonicalNodes({3, 2, 5}, 1, 1), 3u);
}

TEST(Partition, RoundsPadToTheLongestNode) {
  // N = 10, C = 4: lengths 2, 3, 2, 3; world batch 8, unit 2: 2 rounds.
  auto p = Partition::Make({2, 2, 2}, Options(1, 4), 10, 0);
  ASSERT_TRUE(p.has_value()) << p.status().ToString();
  EXPECT_EQ(p->unit(), 2u);
  EXPECT_EQ(p->rounds(), 2u);
  EXPECT_EQ(p->epoch_samples(), 16u);
  EXPECT_EQ(p->samples_per_worker(), 2u);
  // drop_last: floor(10/4) = 2 -> 1 round.
  p = Partition::Make({2, 2, 2}, Options(1, 4, true), 10, 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rounds(), 1u);
  // Resumed after 8 samples: 2 positions skipped, 1 more round covers the length 3.
  p = Partition::Make({2, 2, 2}, Options(1, 4), 10, 8);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->skipped(), 2u);
  EXPECT_EQ(p->rounds(), 1u);
  // Resumed at the end: nothing left.
  p = Partition::Make({2, 2, 2}, Options(1, 4), 10, 16);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rounds(), 0u);
  // drop_last with fewer samples than canonical nodes: an empty epoch.
  p = Partition::Make({2, 1, 1}, Options(1, 2, true), 1, 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rounds(), 0u);
}

TEST(Partition, GlobalOrderIsRoundThenNodeThenPosition) {
  auto p = Partition::Make({1, 1, 1}, Options(6, 3), 100, 0);  // unit 2
  ASSERT_TRUE(p.has_value());
  const CanonicalPosition expected[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1},
                                        {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 2}, {2, 3}};
  for (uint64_t i = 0; i < 12; ++i) EXPECT_EQ(p->Global(i), expected[i]) << i;
}

TEST(Partition, DealsBatchesAroundRanksOncePerWorker) {
  // 2 nodes x 2 ranks x 3 workers, batch 2: world batch 24; C = 4, unit 6, each node owns two
  // canonical nodes and a 12-sample slice per round.
  auto p = Partition::Make({2, 2, 3}, Options(2, 4), 1000, 0);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->unit(), 6u);
  // Node 1, rank 1, worker 2: batch q = 2*2 + 1 = 5 of the slice, offsets 10, 11: canonical
  // node 2 + 10/6 = 3, positions 4, 5; the next round adds a unit.
  EXPECT_EQ(p->OfWorker({1, 1, 2}, 0), (CanonicalPosition{3, 4}));
  EXPECT_EQ(p->OfWorker({1, 1, 2}, 1), (CanonicalPosition{3, 5}));
  EXPECT_EQ(p->OfWorker({1, 1, 2}, 2), (CanonicalPosition{3, 10}));
  // Node 0, rank 1, worker 0: batch 1, offsets 2, 3 of canonical node 0.
  EXPECT_EQ(p->OfWorker({0, 1, 0}, 0), (CanonicalPosition{0, 2}));
  EXPECT_EQ(p->NodesPerBatch({0, 1, 0}), 1u);
  // Rank 1, worker 1 gets batch 3: offsets 6, 7, the start of canonical node 1.
  EXPECT_EQ(p->OfWorker({0, 1, 1}, 0), (CanonicalPosition{1, 0}));

  // Every (node, position) of a round is dealt exactly once.
  std::set<std::pair<uint32_t, uint64_t>> seen;
  for (uint32_t n = 0; n < 2; ++n) {
    for (uint32_t r = 0; r < 2; ++r) {
      for (uint32_t w = 0; w < 3; ++w) {
        for (uint64_t j = 0; j < 2; ++j) {
          const CanonicalPosition c = p->OfWorker({n, r, w}, j);
          EXPECT_TRUE(seen.insert({c.node, c.position}).second);
          EXPECT_LT(c.position, 6u);
        }
      }
    }
  }
  EXPECT_EQ(seen.size(), 24u);
}

TEST(Partition, BatchesSpanningNodes) {
  // unit 1, batch 4: each batch draws from 4 canonical nodes.
  auto p = Partition::Make({1, 2, 1}, Options(4, 8), 100, 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->NodesPerBatch({0, 1, 0}), 4u);
  EXPECT_EQ(p->OfWorker({0, 1, 0}, 0), (CanonicalPosition{4, 0}));
  EXPECT_EQ(p->OfWorker({0, 1, 0}, 3), (CanonicalPosition{7, 0}));
  EXPECT_EQ(p->OfWorker({0, 1, 0}, 4), (CanonicalPosition{4, 1}));
}

TEST(Partition, RejectsImpossibleShapesNamingTheNumbers) {
  auto p = Partition::Make({0, 2, 3}, Options(1), 100, 0);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(p.error().message(), HasSubstr("0 nodes x 2 ranks x 3 workers"));

  p = Partition::Make({1, 1, 1}, Options(0), 100, 0);
  ASSERT_FALSE(p.has_value());
  EXPECT_THAT(p.error().message(), HasSubstr("batch_size"));

  p = Partition::Make({4, 1, 1}, Options(2, 6), 100, 0);
  ASSERT_FALSE(p.has_value());
  EXPECT_THAT(p.error().message(), HasSubstr("num_canonical_nodes = 6"));
  EXPECT_THAT(p.error().message(), HasSubstr("nodes = 4"));

  p = Partition::Make({2, 2, 3}, Options(5, 8), 1000, 0);
  ASSERT_FALSE(p.has_value());
  EXPECT_THAT(p.error().message(), HasSubstr("= 60 samples"));
  EXPECT_THAT(p.error().message(), HasSubstr("num_canonical_nodes = 8"));

  p = Partition::Make({2, 1, 1}, Options(4, 4), 1000, 6);
  ASSERT_FALSE(p.has_value());
  EXPECT_THAT(p.error().message(), HasSubstr("resume_from = 6"));

  p = Partition::Make({3, 2, 5}, Options(1), 2, 0);
  ASSERT_FALSE(p.has_value());
  EXPECT_THAT(p.error().message(), HasSubstr("2 samples, fewer than num_canonical_nodes = 3"));
}

}  // namespace
}  // namespace ferry::internal_order
