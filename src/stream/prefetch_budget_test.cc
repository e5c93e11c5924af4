#include "stream/prefetch_budget.h"

#include <gtest/gtest.h>

namespace ferry::internal_stream {
namespace {

using Clock = PrefetchBudget::Clock;

TEST(PrefetchBudget, UnderACacheLimitPinnedShardsCountUntilReleased) {
  PrefetchBudget budget(100, /*cache_limited=*/true, nullptr);
  EXPECT_TRUE(budget.Fits(60));
  budget.Started(60);
  EXPECT_TRUE(budget.Fits(40));
  EXPECT_FALSE(budget.Fits(41));
  budget.Landed(60);  // fetched but still pinned: still ahead
  EXPECT_EQ(budget.in_flight(), 0u);
  EXPECT_EQ(budget.ahead(), 60u);
  EXPECT_FALSE(budget.Fits(41));
  budget.Released(60);
  EXPECT_TRUE(budget.Fits(100));
}

TEST(PrefetchBudget, WithoutALimitOnlyShardsInFlightCount) {
  PrefetchBudget budget(100, /*cache_limited=*/false, nullptr);
  budget.Started(60);
  EXPECT_FALSE(budget.Fits(41));
  budget.Landed(60);
  EXPECT_TRUE(budget.Fits(100));
}

TEST(PrefetchBudget, AShardLargerThanTheCapFitsOnceNothingElseIsAhead) {
  PrefetchBudget budget(100, true, nullptr);
  EXPECT_TRUE(budget.Fits(1000));
  budget.Started(1);
  EXPECT_FALSE(budget.Fits(1000));
}

TEST(PrefetchBudget, TheByteBudgetTightensTheCapAndIsAskedAgainAfterAWhile) {
  PrefetchBudget none(100, true, nullptr);
  EXPECT_FALSE(none.NeedsRecheck(Clock::now()));

  PrefetchBudget budget(100, true, [] { return uint64_t{30}; });
  const auto t0 = Clock::now();
  ASSERT_TRUE(budget.NeedsRecheck(t0));
  budget.Recheck(budget.byte_budget()(), t0);
  EXPECT_EQ(budget.cap(), 30u);
  budget.Started(20);
  EXPECT_FALSE(budget.Fits(11));
  EXPECT_FALSE(budget.NeedsRecheck(t0 + PrefetchBudget::kRecheckInterval / 2));
  EXPECT_TRUE(budget.NeedsRecheck(t0 + PrefetchBudget::kRecheckInterval));
  // A budget above max_bytes_in_flight does not raise the cap past it.
  budget.Recheck(1000, t0 + PrefetchBudget::kRecheckInterval);
  EXPECT_EQ(budget.cap(), 100u);
}

}  // namespace
}  // namespace ferry::internal_stream
