// Prefetcher: makes the shards a worker will need soon local before it asks for them.
//
// A planner thread walks a look-ahead copy of the worker's plan cursor, turns samples into the
// shards they live in (runs of consecutive samples in one shard, in order of first use) and
// starts their fetches on a small pool, within `concurrency` and the PrefetchBudget. A fetched
// shard stays pinned until the worker has passed its last use in the window. Unset predownload
// and concurrency are sized from the worker's rate and the LinkEstimator (Little's law); the
// rules, the cold start and the gauges are in docs/streaming.md, "Prefetch".
//
// Thread-safety: Wait and Advance are called by the worker's thread; the rest is internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "base/bounded_queue.h"
#include "base/mutex.h"
#include "cache/link_estimator.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/order/epoch_plan.h"
#include "ferry/result.h"
#include "stream/prefetch_budget.h"

namespace ferry::internal_stream {

/// A shard of one stream.
struct ShardKey {
  uint32_t stream = 0;
  uint32_t shard = 0;
  friend auto operator<=>(const ShardKey&, const ShardKey&) = default;
};

struct PrefetchOptions {
  std::optional<uint64_t> predownload;  // samples; nullopt = auto
  std::optional<uint32_t> concurrency;  // shards at once; nullopt = auto
  uint64_t max_bytes_in_flight = uint64_t{1} << 30;
  /// The caches have a cache_limit, so pins could crowd them: fetched shards still pinned count
  /// against max_bytes_in_flight, and an auto look-ahead stays within its window (pins last to
  /// a shard's last use in the look-ahead). Without one, only shards in flight count and the
  /// look-ahead reaches on for shards to fetch.
  bool cache_limited = true;
  /// When set, asked every 250 ms or so (off the lock) for a tighter cap on the bytes fetched
  /// ahead: this reader's share of cache_limit among the readers of its cache folder.
  std::function<uint64_t()> byte_budget;
  /// Samples per shard over the dataset (0: unknown). Until the first fetch has ended, auto
  /// concurrency fetches at once the shards that four shards' worth of the worker's samples
  /// touch: four in shard order, every shard of the span in a shuffled one.
  double samples_per_shard = 0;
  /// The most downloads the node allows at once from the cache folder
  /// (node_download_concurrency): auto concurrency stays at or below it.
  uint32_t node_download_concurrency = UINT32_MAX;
  /// The worker reads its first batch by range (a cold start): until FirstBatchRead, auto
  /// concurrency fetches at most two shards at once, as more bodies would crowd its small
  /// ranged reads (at RTT 100 ms a shuffled first batch of 64 took 0.57-0.88 s beside 16
  /// bodies, 0.38-0.46 s beside two).
  bool cold_batch = false;
};

class Prefetcher {
 public:
  /// `resolve` maps a plan sample id to its shard; `shard_bytes` gives a shard's download size;
  /// `caches[stream]` fetches the shards of each stream.
  Prefetcher(WorkerCursor lookahead, std::function<ShardKey(uint64_t sample)> resolve,
             std::function<uint64_t(const ShardKey&)> shard_bytes, std::vector<ShardCache*> caches,
             PrefetchOptions options);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// The worker is reading the sample at `position` of its sequence: the shards of earlier
  /// positions only may be unpinned.
  void Advance(uint64_t position);

  /// Blocks until `key` is local and returns its pinned handle (fetching it now if the window
  /// had not reached it), or the error that fetching it ended with.
  Result<ShardHandle> Wait(const ShardKey& key);

  /// Starts fetching `key`, which the worker will read at `position` of its sequence, if it is
  /// not already (as Wait does), and waits up to `timeout` for that fetch to end. True when it
  /// has: Wait(key) will not block on a download. (The waits of a caller that must stay
  /// responsive: Python's Ctrl+C.)
  bool AwaitFetched(const ShardKey& key, uint64_t position, std::chrono::milliseconds timeout);

  /// True when `key` has been fetched (is local and pinned by the prefetcher).
  bool Ready(const ShardKey& key);

  /// Starts fetching `key` now if it is not already (without waiting for it).
  void Request(const ShardKey& key);

  /// The worker has been given its first batch, or its first sample where it read no batch by
  /// range (or an error for it). Until then a cold start does not widen to the shards its order
  /// touches: their bodies would crowd the small ranged reads of those samples.
  void FirstBatchRead();

  /// True once any fetch has completed: the cold start is over.
  bool Warm();

  /// Runs of the window the planner has looked at so far: its work, for tests.
  uint64_t PlannerSteps();

 private:
  struct FetchState {
    bool done = false;
    Status error;
    std::optional<ShardHandle> handle;
    uint64_t bytes = 0;
  };

  void Plan(std::stop_token stop);   // the scheduling thread
  void Fetch(std::stop_token stop);  // a fetch thread: takes keys from queue_
  void Start(const ShardKey& key) REQUIRES(mu_);
  uint64_t WindowSamples() const REQUIRES(mu_);
  uint32_t Concurrency() const REQUIRES(mu_);
  bool Seeks() const;           // the look-ahead may reach past its window (auto, no cache_limit)
  void Retune() REQUIRES(mu_);  // auto sizing
  void Drop(uint64_t position) REQUIRES(mu_);           // unpin what is behind
  void StartWithinLimits() REQUIRES(mu_);               // fetch the window in order of first use
  uint64_t ColdSpan() const REQUIRES(mu_);              // samples cold_shards_ counts over, or 0
  void CountColdShards(bool ended) REQUIRES(mu_);       // sets cold_shards_ once the span is seen
  bool Local(const ShardKey& key) const REQUIRES(mu_);  // fetched (and pinned)
  size_t ShardsToFetch() const REQUIRES(mu_);           // in the look-ahead and not local
  // Starts `key` (needed at `position`) unless it is started, then waits (up to `timeout`, if
  // given) until its fetch has ended; false when the time ran out first. `lock` holds mu_.
  bool WaitFetched(MutexLock& lock, const ShardKey& key, uint64_t position,
                   std::optional<std::chrono::milliseconds> timeout) REQUIRES(mu_);

  WorkerCursor lookahead_ GUARDED_BY(mu_);
  const std::function<ShardKey(uint64_t)> resolve_;
  const std::function<uint64_t(const ShardKey&)> shard_bytes_;
  const std::vector<ShardCache*> caches_;
  const PrefetchOptions options_;

  Mutex mu_;
  std::condition_variable_any changed_;
  uint64_t taken_ GUARDED_BY(mu_) = 0;  // the worker's position
  // The look-ahead over [taken_, looked_) as runs of consecutive positions in one shard, oldest
  // first: a run is its first position and its shard, and ends where the next begins. Runs, not
  // positions, so that the planner's walks cost the shard changes of the window, not its samples
  // (a shard of 1 KB samples in shard order is 60,000 positions and one run).
  struct Run {
    uint64_t begin = 0;
    ShardKey key;
  };
  std::deque<Run> window_ GUARDED_BY(mu_);
  uint64_t looked_ GUARDED_BY(mu_) = 0;
  // Where the look-ahead started (a resumed cursor: past 0)
  uint64_t first_looked_ GUARDED_BY(mu_) = 0;
  // Runs beginning before this have been started or found started
  uint64_t scanned_ GUARDED_BY(mu_) = 0;
  // The position of the last shard the seek found still to fetch
  uint64_t found_at_ GUARDED_BY(mu_) = 0;
  // The shards of the window changed since SetUpcoming
  bool upcoming_stale_ GUARDED_BY(mu_) = true;
  uint64_t planner_steps_ GUARDED_BY(mu_) = 0;
  // Started (in flight or done) and still wanted
  std::map<ShardKey, FetchState> fetches_ GUARDED_BY(mu_);
  // The last window position needing each shard
  std::map<ShardKey, uint64_t> last_use_ GUARDED_BY(mu_);
  uint32_t in_flight_ GUARDED_BY(mu_) = 0;
  bool dirty_ GUARDED_BY(mu_) = true;   // something changed that the planner should look at
  bool warm_ GUARDED_BY(mu_) = false;   // a fetch has completed
  std::atomic<uint64_t> next_wake_{0};  // Advance wakes the planner at this position
  PrefetchBudget budget_ GUARDED_BY(mu_);
  // Auto sizing.
  double rate_ GUARDED_BY(mu_) = 0;           // samples/s the worker consumes (EWMA)
  double shard_samples_ GUARDED_BY(mu_) = 0;  // mean samples per distinct shard in the window
  internal_cache::LinkEstimator link_ GUARDED_BY(mu_);  // the fetches that crossed the link
  uint64_t auto_window_ GUARDED_BY(mu_) = 0;            // samples
  uint64_t shard_changes_ GUARDED_BY(mu_) = 0;  // times the look-ahead moved to another shard
  uint32_t auto_concurrency_ GUARDED_BY(mu_) = 2;
  // Distinct shards among the first four shards' worth of samples of the look-ahead (0: not yet
  // counted): the concurrency until a fetch has ended.
  uint32_t cold_shards_ GUARDED_BY(mu_) = 0;
  bool first_batch_read_ GUARDED_BY(mu_) = false;  // FirstBatchRead has been called
  bool cold_batch_ GUARDED_BY(mu_);                // options_.cold_batch, until FirstBatchRead
  std::chrono::steady_clock::time_point last_advance_ GUARDED_BY(mu_) =
      std::chrono::steady_clock::now();
  uint64_t last_advance_taken_ GUARDED_BY(mu_) = 0;

  BoundedQueue<ShardKey> queue_;
  std::vector<std::jthread> pool_;
  std::jthread planner_;  // last: uses everything above
};

}  // namespace ferry::internal_stream
