#include "files/fetch_ahead.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>

#include "base/in_flight_counter_testutil.h"

namespace ferry::internal_files {
namespace {

using namespace std::chrono_literals;

internal_cache::LinkEstimator Link(double latency_s, uint64_t bytes) {
  internal_cache::LinkEstimator link;
  link.Record(latency_s, bytes, 1);
  return link;
}

TEST(AutoConcurrency, IsLittlesLawWithinBounds) {
  // 1 GiB/s at 100 ms with 100 KB files: ~1074 in flight, twice that with the headroom,
  // bounded by max.
  EXPECT_EQ(AutoConcurrency(Link(0.1, 100'000), uint64_t{1} << 30, uint64_t{1} << 30, 8, 256),
            256u);
  EXPECT_EQ(AutoConcurrency(Link(0.1, 100'000), uint64_t{1} << 30, uint64_t{1} << 30, 8, 4000),
            2148u);
  // 100 MB/s at 20 ms with 1 MB files: 4 -> raised to the minimum.
  EXPECT_EQ(AutoConcurrency(Link(0.02, 1'000'000), 100'000'000, uint64_t{1} << 30, 8, 256), 8u);
  // 100 MB/s at 100 ms with 1 MB files: 20.
  EXPECT_EQ(AutoConcurrency(Link(0.1, 1'000'000), 100'000'000, uint64_t{1} << 30, 8, 256), 20u);
  // The byte budget holds 10 such files.
  EXPECT_EQ(AutoConcurrency(Link(0.1, 1'000'000), uint64_t{1} << 30, 10'000'000, 8, 256), 10u);
  // A budget below one file still allows one, and below the minimum wins over it.
  EXPECT_EQ(AutoConcurrency(Link(0.1, 1'000'000), uint64_t{1} << 30, 10, 8, 256), 1u);
}

TEST(FetchAhead, HandsOverInOrderWhileFetchingManyAtOnce) {
  testing::InFlightCounter fetching;
  std::vector<uint64_t> files;
  for (uint64_t i = 0; i < 200; ++i) files.push_back(199 - i);
  FetchAhead fetch(
      files,
      [&](uint64_t f, std::stop_token) -> Result<std::string> {
        fetching.Enter();
        // Later files finish sooner: the order must come from the sequence, not completion.
        std::this_thread::sleep_for(std::chrono::microseconds(2000 - 5 * (f % 300)));
        fetching.Leave();
        return std::to_string(f);
      },
      [](uint64_t) { return 10; }, {.concurrency = 16});
  for (uint64_t f : files) {
    auto item = fetch.Next();
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(item->first, f);
    EXPECT_EQ(item->second.value(), std::to_string(f));
  }
  EXPECT_FALSE(fetch.Next().has_value());
  EXPECT_EQ(fetch.remaining(), 0u);
  EXPECT_GT(fetching.most.load(), 4) << "fetches overlap";
  EXPECT_LE(fetching.most.load(), 16) << "never more than the concurrency";
}

TEST(FetchAhead, AwaitNextWaitsForTheNextFileInSlices) {
  std::atomic<bool> release{false};
  FetchAhead fetch(
      {0, 1},
      [&](uint64_t f, std::stop_token) -> Result<std::string> {
        while (f == 0 && !release) std::this_thread::sleep_for(1ms);
        return std::to_string(f);
      },
      [](uint64_t) { return 10; }, {.concurrency = 2});
  EXPECT_FALSE(fetch.AwaitNext(20ms)) << "file 0 is still on its way";
  release = true;
  EXPECT_TRUE(fetch.AwaitNext(10s));
  EXPECT_EQ(fetch.Next()->first, 0u);
  EXPECT_TRUE(fetch.AwaitNext(10s));
  EXPECT_EQ(fetch.Next()->first, 1u);
  EXPECT_TRUE(fetch.AwaitNext(0ms)) << "past the end, Next does not wait";
  EXPECT_FALSE(fetch.Next().has_value());
}

TEST(FetchAhead, TheByteBudgetLimitsWhatIsAhead) {
  std::atomic<uint64_t> started{0};
  FetchAhead fetch(
      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
      [&](uint64_t f, std::stop_token) -> Result<std::string> {
        ++started;
        return std::string(100, static_cast<char>('a' + f));
      },
      [](uint64_t) { return 100; }, {.concurrency = 8, .max_bytes_in_flight = 300});
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(started.load(), 3u) << "300 bytes hold three files of 100 ahead of the reader";
  ASSERT_TRUE(fetch.Next().has_value());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(started.load(), 4u);
}

TEST(FetchAhead, ErrorsComeInSequenceOrder) {
  FetchAhead fetch(
      {0, 1, 2},
      [](uint64_t f, std::stop_token) -> Result<std::string> {
        if (f == 1) return NotFoundError("file 1 is gone");
        return std::string("ok");
      },
      [](uint64_t) { return 2; }, {.concurrency = 3});
  EXPECT_TRUE(fetch.Next()->second.ok());
  auto second = fetch.Next();
  EXPECT_EQ(second->first, 1u);
  EXPECT_EQ(second->second.error().code(), StatusCode::kNotFound);
  EXPECT_TRUE(fetch.Next()->second.ok());
}

TEST(FetchAhead, AutoGrowsTheConcurrencyWithTheLatency) {
  std::vector<uint64_t> files(400);
  std::iota(files.begin(), files.end(), 0);
  FetchAhead fetch(
      files,
      [](uint64_t, std::stop_token) -> Result<std::string> {
        std::this_thread::sleep_for(5ms);
        return std::string(1000, 'x');
      },
      [](uint64_t) { return 1000; }, {.max_concurrency = 64, .target_bytes_per_s = 100'000'000});
  EXPECT_EQ(fetch.concurrency(), kMinAutoConcurrency);
  while (fetch.Next()) {
  }
  // 100 MB/s x 5 ms / 1000 B = 500 -> the maximum.
  EXPECT_EQ(fetch.concurrency(), 64u);
}

TEST(FetchAhead, DestroyingItMidwayStopsItsThreads) {
  std::atomic<int> calls{0};
  {
    std::vector<uint64_t> files(10000);
    std::iota(files.begin(), files.end(), 0);
    FetchAhead fetch(
        files,
        [&](uint64_t, std::stop_token) -> Result<std::string> {
          ++calls;
          std::this_thread::sleep_for(1ms);
          return std::string("x");
        },
        [](uint64_t) { return 1; }, {.concurrency = 4});
    fetch.Next();
  }
  const int after = calls.load();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(calls.load(), after);
  EXPECT_LT(after, 10000);
}

TEST(FetchAhead, GoingAwayStopsTheFetchesInFlight) {
  // A fetch that lasts until it is stopped (or 10 s: a FetchAhead deaf to the stop fails the
  // test instead of hanging it).
  std::atomic<int> stopped{0};
  std::atomic<int> started{0};
  const auto begin = std::chrono::steady_clock::now();
  {
    FetchAhead fetch(
        {0, 1, 2, 3},
        [&](uint64_t, std::stop_token stop) -> Result<std::string> {
          ++started;
          for (int i = 0; i < 10'000 && !stop.stop_requested(); ++i)
            std::this_thread::sleep_for(1ms);
          if (stop.stop_requested()) ++stopped;
          return CancelledError("stopped");
        },
        [](uint64_t) { return 1; }, {.concurrency = 2});
    while (started < 2) std::this_thread::sleep_for(1ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 5s);
  EXPECT_EQ(stopped.load(), 2);
}

}  // namespace
}  // namespace ferry::internal_files
