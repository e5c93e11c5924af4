#include "cache/link_estimator.h"

#include <gtest/gtest.h>

namespace ferry::internal_cache {
namespace {

TEST(Ewma, TakesTheFirstSampleWholeThenMovesByItsWeight) {
  EXPECT_DOUBLE_EQ(Ewma(0, 10), 10);
  EXPECT_DOUBLE_EQ(Ewma(10, 20), 10 + kEwmaWeight * 10);
  EXPECT_DOUBLE_EQ(Ewma(10, 10), 10);
}

TEST(LinkEstimator, SaysNothingUntilAFetchIsRecorded) {
  LinkEstimator link;
  EXPECT_FALSE(link.measured());
  EXPECT_EQ(link.FetchesFor(1e9), 0);
  link.Record(0, 1000, 1);  // a local hit: no time on the link
  EXPECT_FALSE(link.measured());
}

TEST(LinkEstimator, MeasuresLatencySizeAndTheLinksRate) {
  LinkEstimator link;
  // Four fetches share the link; each moves 1 MB in 0.1 s: 40 MB/s together.
  link.Record(0.1, 1'000'000, 4);
  EXPECT_TRUE(link.measured());
  EXPECT_DOUBLE_EQ(link.latency_s(), 0.1);
  EXPECT_DOUBLE_EQ(link.mean_bytes(), 1e6);
  EXPECT_DOUBLE_EQ(link.bandwidth(), 40e6);
  link.Record(0.3, 3'000'000, 4);
  EXPECT_DOUBLE_EQ(link.latency_s(), Ewma(0.1, 0.3));
  EXPECT_DOUBLE_EQ(link.mean_bytes(), Ewma(1e6, 3e6));
  EXPECT_DOUBLE_EQ(link.bandwidth(), Ewma(40e6, 40e6));
  EXPECT_EQ(link.fetches(), 2u);
}

TEST(LinkEstimator, FetchesForIsLittlesLawWithHeadroom) {
  LinkEstimator link;
  link.Record(0.1, 100'000, 1);
  // 1 GB/s at 100 ms per 100 KB fetch: 1,000 in flight, twice that with the margin.
  EXPECT_DOUBLE_EQ(link.FetchesFor(1e9), 1e9 * 0.1 * LinkEstimator::kHeadroom / 1e5);
  // The rate the link itself carries: as many as now share it, times the margin.
  EXPECT_DOUBLE_EQ(link.FetchesFor(link.bandwidth()), LinkEstimator::kHeadroom);
}

}  // namespace
}  // namespace ferry::internal_cache
