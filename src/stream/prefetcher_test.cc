#include "stream/prefetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "ferry/metrics/metrics.h"

namespace ferry::internal_stream {
namespace {

using namespace std::chrono_literals;

// A cache whose shards are always there after a short fetch; counts the acquisitions of each
// shard (the prefetcher's, then the worker's own pin in Wait).
class CountingCache : public ShardCache {
 public:
  const DatasetDescription& index() const override { return index_; }
  Result<ShardHandle> Acquire(size_t k, std::stop_token stop) override {
    if (hold_fetches_) {
      // A download that lasts until the reader goes away (or 10 s, so that a prefetcher deaf to
      // the stop fails the test instead of hanging it).
      MutexLock lock(mu_);
      ++holding_;
      held_.notify_all();
      held_.wait_for(lock, stop, 10s, [] { return false; });
      if (stop.stop_requested()) ++stopped_;
      return CancelledError("held");
    }
    std::this_thread::sleep_for(1ms);
    MutexLock lock(mu_);
    ++acquired_[k];
    return MakeHandle(k, "/dev/null", -1, false);
  }
  bool IsLocal(size_t) const override { return false; }
  void SetUpcoming(const void*, std::vector<size_t>) override {}
  uint64_t DiskUsage() const override { return 0; }

  std::map<size_t, int> acquired() const {
    MutexLock lock(mu_);
    return acquired_;
  }
  // From now on every Acquire lasts until it is stopped.
  void HoldFetches() { hold_fetches_ = true; }
  // Waits until `n` Acquires are being held.
  void AwaitHolding(int n) {
    MutexLock lock(mu_);
    held_.wait_for(lock, 10s, [&]() REQUIRES(mu_) { return holding_ >= n; });
  }
  int stopped() const {
    MutexLock lock(mu_);
    return stopped_;
  }
  int holding() const {
    MutexLock lock(mu_);
    return holding_;
  }

 private:
  DatasetDescription index_;
  mutable Mutex mu_;
  std::condition_variable_any held_;
  std::atomic<bool> hold_fetches_{false};
  int holding_ GUARDED_BY(mu_) = 0;
  int stopped_ GUARDED_BY(mu_) = 0;
  std::map<size_t, int> acquired_ GUARDED_BY(mu_);
};

std::shared_ptr<const EpochPlan> OnePlan(size_t shards, uint64_t samples_per_shard, bool shuffle) {
  return EpochPlan::Create(std::vector<uint64_t>(shards, samples_per_shard),
                           OrderOptions{.shuffle = shuffle}, WorldShape{}, 0)
      .value();
}

// Reads `cursor` to its end as a worker does: Advance to each sample, and Wait for its shard
// when it is in another shard than the one before.
void ReadAll(Prefetcher& prefetcher, WorkerCursor& cursor, const EpochPlan& plan) {
  std::optional<ShardKey> current;
  while (auto v = cursor.Next()) {
    prefetcher.Advance(cursor.taken() - 1);
    const ShardKey key{0, static_cast<uint32_t>(plan.Locate(*v).first)};
    if (current == key) continue;
    ASSERT_TRUE(prefetcher.Wait(key).ok());
    current = key;
  }
}

// What each test starts a prefetcher over: `shards` shards of `samples_per_shard` samples in
// shard order (or shuffled), the worker's cursor, and a counting cache.
struct OneWorker {
  OneWorker(size_t shards, uint64_t samples_per_shard, bool shuffle = false)
      : plan(OnePlan(shards, samples_per_shard, shuffle)), cursor(plan->Worker({}).value()) {}

  // A prefetcher of `cursor`, every shard `shard_bytes` big; counts the samples its look-ahead
  // resolves into `resolved`.
  std::unique_ptr<Prefetcher> Start(PrefetchOptions options, uint64_t shard_bytes = 100,
                                    std::atomic<uint64_t>* resolved = nullptr) {
    return std::make_unique<Prefetcher>(
        cursor,
        [plan = plan, resolved](uint64_t s) {
          if (resolved != nullptr) ++*resolved;
          return ShardKey{0, static_cast<uint32_t>(plan->Locate(s).first)};
        },
        [shard_bytes](const ShardKey&) { return shard_bytes; }, std::vector<ShardCache*>{&cache},
        options);
  }

  std::shared_ptr<const EpochPlan> plan;
  WorkerCursor cursor;
  CountingCache cache;
};

TEST(PrefetcherTest, TheShardBeingReadStaysPinnedUntilTheWorkerMovesOn) {
  // One sample per shard: every sample is its shard's last use. Unpinned before the worker's
  // Wait, a fetched shard would be fetched again, behind the downloads in the queue.
  OneWorker t(200, 1);
  auto prefetcher = t.Start({.predownload = 48, .concurrency = 4, .cache_limited = false});
  std::this_thread::sleep_for(100ms);  // the window fills
  ReadAll(*prefetcher, t.cursor, *t.plan);
  const auto acquired = t.cache.acquired();
  EXPECT_EQ(acquired.size(), 200u);
  for (const auto& [shard, n] : acquired) {
    EXPECT_LE(n, 2) << "shard " << shard << ": the prefetch, then the worker's own pin";
  }
}

TEST(PrefetcherTest, AResumedWorkerSizesItsWindowFromWhereItStarted) {
  // 1,000 shards of 100 samples in shard order, resumed half-way: samples per shard are counted
  // from where the look-ahead began, not from 0 (which made the window ~4x the skip).
  OneWorker t(1000, 100);
  t.cursor.Skip(50'000);
  std::atomic<uint64_t> resolved{0};
  auto prefetcher = t.Start({.cache_limited = true}, 100, &resolved);
  std::this_thread::sleep_for(300ms);
  // The auto window is at most 64 shards' worth of samples.
  EXPECT_LE(metrics::GetGauge("/ferry/stream/predownload").value(), 64 * 100);
  EXPECT_LE(resolved.load(), 64u * 100u);
}

TEST(PrefetcherTest, AShardLargerThanTheByteBudgetIsStillFetchedAhead) {
  // Each shard is bigger than max_bytes_in_flight: one at a time, but ahead of the worker.
  OneWorker t(50, 1);
  auto prefetcher = t.Start(
      {.predownload = 50, .concurrency = 4, .max_bytes_in_flight = 100, .cache_limited = false},
      150);
  std::this_thread::sleep_for(300ms);  // the worker has not started
  EXPECT_GT(t.cache.acquired().size(), 10u);
}

TEST(PrefetcherTest, GoingAwayStopsTheFetchesInFlight) {
  // Destroying the prefetcher (the iterator is closed mid-epoch) must not wait for its
  // downloads: over a slow link that was tens of seconds. Each fetch here lasts until stopped.
  OneWorker t(50, 10);
  t.cache.HoldFetches();
  auto prefetcher = t.Start({.predownload = 100, .concurrency = 4, .cache_limited = false});
  t.cache.AwaitHolding(4);
  const auto start = std::chrono::steady_clock::now();
  prefetcher.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // not the 10 s each fetch lasts
  EXPECT_EQ(t.cache.stopped(), 4);
}

TEST(PrefetcherTest, AShardAwaitedAheadOfItsPositionStaysPinnedUntilItIsRead) {
  // The worker waits for the shard of its next sample before it advances to it (Python's
  // Ctrl+C-friendly wait): pinned only to the previous position, the Advance would unpin it and
  // the Wait fetch it again.
  OneWorker t(200, 1);
  auto prefetcher = t.Start({.predownload = 1, .concurrency = 1, .cache_limited = false});
  const ShardKey far{0, 150};  // outside the one-sample window
  ASSERT_TRUE(prefetcher->AwaitFetched(far, 150, 10s));
  prefetcher->Advance(150);
  ASSERT_TRUE(prefetcher->Wait(far).ok());
  EXPECT_EQ(t.cache.acquired()[150], 2) << "the prefetch, then the worker's own pin";
}

TEST(PrefetcherTest, ThePlannersWorkFollowsShardChangesNotSamples) {
  // 20 shards of 20,000 samples in shard order, all fetched quickly: a planner that walked the
  // window's samples on every wake-up made this take minutes; it walks runs of one shard.
  OneWorker t(20, 20'000);
  std::atomic<uint64_t> resolved{0};
  auto prefetcher = t.Start({.cache_limited = false}, 100, &resolved);
  const auto start = std::chrono::steady_clock::now();
  ReadAll(*prefetcher, t.cursor, *t.plan);
  // Every sample is resolved once by the look-ahead, at most; the planner looks at runs (20
  // here) once per wake-up and when the window's shards change - not at 400,000 samples.
  EXPECT_LE(resolved.load(), 400'000u);
  EXPECT_EQ(t.cache.acquired().size(), 20u);
  EXPECT_LT(prefetcher->PlannerSteps(), 20'000u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);  // a hang guard, not a speed target
}

TEST(PrefetcherTest, AColdStartFetchesTheShardsTheFirstSamplesNeedOnceTheFirstIsRead) {
  // Before any fetch has been timed: four shards at once until the worker has its first sample,
  // then as many as four shards' worth of its samples touch - all of them (up to the most auto
  // allows) in a shuffled order, still four in shard order. Each fetch here lasts until stopped,
  // so nothing is ever timed.
  for (const bool shuffle : {true, false}) {
    SCOPED_TRACE(shuffle ? "shuffled" : "shard order");
    OneWorker t(40, 100, shuffle);
    t.cache.HoldFetches();
    auto prefetcher =
        t.Start({.cache_limited = false, .samples_per_shard = 100}, /*shard_bytes=*/1000);
    t.cache.AwaitHolding(4);
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(t.cache.holding(), 4) << "before the first sample";
    prefetcher->FirstBatchRead();
    if (shuffle) {
      t.cache.AwaitHolding(16);
      EXPECT_EQ(t.cache.holding(), 16);
      EXPECT_EQ(metrics::GetGauge("/ferry/stream/concurrency").value(), 16);
    } else {
      std::this_thread::sleep_for(200ms);
      EXPECT_EQ(t.cache.holding(), 4);
    }
  }
}

TEST(PrefetcherTest, AColdFirstBatchReadByRangeFetchesTwoShardsUntilItIsRead) {
  // Bodies beside the batch's ranged reads would crowd them: two at once, not four, then the
  // full width of the cold start once the batch is read. An explicit concurrency is kept.
  for (const bool explicit_concurrency : {false, true}) {
    SCOPED_TRACE(explicit_concurrency ? "concurrency 6" : "auto");
    OneWorker t(40, 100, /*shuffle=*/true);
    t.cache.HoldFetches();
    PrefetchOptions options{.cache_limited = false, .samples_per_shard = 100, .cold_batch = true};
    if (explicit_concurrency) options.concurrency = 6;
    auto prefetcher = t.Start(options, /*shard_bytes=*/1000);
    const int before = explicit_concurrency ? 6 : 2;
    t.cache.AwaitHolding(before);
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(t.cache.holding(), before) << "while the first batch is read by range";
    prefetcher->FirstBatchRead();
    const int after = explicit_concurrency ? 6 : 16;
    t.cache.AwaitHolding(after);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(t.cache.holding(), after);
  }
}

TEST(PrefetcherTest, AutoConcurrencyStaysWithinTheNodesDownloadSlots) {
  // More fetches than the node's slots would only wait for them: with three slots, a shuffled
  // cold start fetches three shards at once, not sixteen.
  OneWorker t(40, 100, /*shuffle=*/true);
  t.cache.HoldFetches();
  auto prefetcher = t.Start(
      {.cache_limited = false, .samples_per_shard = 100, .node_download_concurrency = 3}, 1000);
  prefetcher->FirstBatchRead();
  t.cache.AwaitHolding(3);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(t.cache.holding(), 3);
  EXPECT_EQ(metrics::GetGauge("/ferry/stream/concurrency").value(), 3);
}

}  // namespace
}  // namespace ferry::internal_stream
