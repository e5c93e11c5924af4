#include "cache/cache_budget.h"

#include <gtest/gtest.h>

namespace ferry::internal_cache {
namespace {

TEST(CacheBudget, UnboundedWithoutALimitOrWhenEverythingFits) {
  const CacheBudget none;
  EXPECT_FALSE(none.limited());
  EXPECT_EQ(none.OpenBytesPerReader(2), UINT64_MAX);
  EXPECT_EQ(none.AheadBytesPerReader(2, 0), UINT64_MAX);
  const CacheBudget fits(1000, /*fits=*/true);
  EXPECT_FALSE(fits.limited());
  EXPECT_EQ(fits.AheadBytesPerReader(1, 0), UINT64_MAX);
}

TEST(CacheBudget, PartsAddUpToTheLimit) {
  const CacheBudget budget(1000, /*fits=*/false);
  ASSERT_TRUE(budget.limited());
  EXPECT_EQ(budget.WorkingSetRoom(), 500u);
  EXPECT_EQ(budget.LimitToHold(500), 1000u);
  // A working set that fills its room leaves the look-ahead a quarter, shared by the readers.
  EXPECT_EQ(budget.OpenBytesPerReader(1), 250u);
  EXPECT_EQ(budget.AheadBytesPerReader(1, 500), 250u);
  EXPECT_EQ(budget.OpenBytesPerReader(2), 125u);
  EXPECT_EQ(budget.AheadBytesPerReader(2, 500), 125u);
  EXPECT_LE(budget.WorkingSetRoom() + budget.OpenBytesPerReader(1) +
                budget.AheadBytesPerReader(1, budget.WorkingSetRoom()),
            1000u);
  // A small working set (py1s) leaves the look-ahead what the others do not use.
  EXPECT_EQ(budget.AheadBytesPerReader(1, 100), 650u);
  EXPECT_EQ(budget.AheadBytesPerReader(1, 0), 750u);
  // Never less than a quarter, even for a working set that did not fit.
  EXPECT_EQ(budget.AheadBytesPerReader(1, 5000), 250u);
}

}  // namespace
}  // namespace ferry::internal_cache
