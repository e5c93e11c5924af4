#include "ferry/metrics/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace ferry::metrics {
namespace {

TEST(Metrics, CountersAndGaugesAreRegisteredOnceByName) {
  Counter& a = GetCounter("/test/metrics/counter");
  Counter& b = GetCounter("/test/metrics/counter");
  EXPECT_EQ(&a, &b);
  const uint64_t before = a.value();
  a.Add();
  b.Add(41);
  EXPECT_EQ(a.value(), before + 42);
  Gauge& g = GetGauge("/test/metrics/gauge");
  g.Set(10);
  g.Add(-3);
  EXPECT_EQ(GetGauge("/test/metrics/gauge").value(), 7);
}

TEST(Metrics, ConcurrentAddsAreNotLost) {
  Counter& c = GetCounter("/test/metrics/concurrent");
  const uint64_t before = c.value();
  std::vector<std::jthread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) GetCounter("/test/metrics/concurrent").Add();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), before + 80000);
}

TEST(Metrics, SnapshotIsJsonOfEveryValue) {
  GetCounter("/test/metrics/snap").Add(5);
  GetGauge("/test/metrics/snap_gauge").Set(-2);
  const std::string json = SnapshotJson();
  EXPECT_THAT(json, ::testing::HasSubstr("\"/test/metrics/snap_gauge\": -2"));
  EXPECT_EQ(Values().at("/test/metrics/snap_gauge"), -2);
  EXPECT_GE(Values().at("/test/metrics/snap"), 5);
}

}  // namespace
}  // namespace ferry::metrics

namespace ferry::metrics {
namespace {

TEST(StoreTotal, SumsOneCounterOverEveryStoreAndNothingElse) {
  const std::map<std::string, int64_t> values = {{"/ferry/storage/s3/bytes_read", 10},
                                                 {"/ferry/storage/az/bytes_read", 5},
                                                 {"/ferry/storage/s3/bytes_read_total", 99},
                                                 {"/ferry/cache/bytes_read", 7},
                                                 {"/ferry/storage/s3/requests", 3}};
  EXPECT_EQ(StoreTotal(values, "bytes_read"), 15);
  EXPECT_EQ(StoreTotal(values, "requests"), 3);
  EXPECT_EQ(StoreTotal(values, "errors"), 0);
}

}  // namespace
}  // namespace ferry::metrics
