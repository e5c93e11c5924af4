#include "stream/prefetcher.h"

#include <algorithm>
#include <cmath>

#include "base/log.h"
#include "ferry/metrics/metrics.h"

namespace ferry::internal_stream {
namespace {

constexpr uint32_t kMaxAutoConcurrency = 16;
// Shards fetched at once while a cold start reads its first batch by range.
constexpr uint32_t kColdBatchConcurrency = 2;
// How far past the worker an auto look-ahead may reach while it looks for shards to fetch.
constexpr uint64_t kMaxLookahead = uint64_t{1} << 20;
constexpr uint64_t kSeekSlack = 4096;
// The most samples the cold start looks at to count the shards it needs (1 KB samples come
// 60,000 to a 64 MB shard; a few thousand show whether the order stays in one shard).
constexpr uint64_t kMaxColdSpan = 4 * kSeekSlack;

}  // namespace

Prefetcher::Prefetcher(WorkerCursor lookahead, std::function<ShardKey(uint64_t)> resolve,
                       std::function<uint64_t(const ShardKey&)> shard_bytes,
                       std::vector<ShardCache*> caches, PrefetchOptions options)
    : lookahead_(std::move(lookahead)),
      resolve_(std::move(resolve)),
      shard_bytes_(std::move(shard_bytes)),
      caches_(std::move(caches)),
      options_(options),
      budget_(options_.max_bytes_in_flight, options_.cache_limited, options_.byte_budget),
      queue_(1024) {
  // A resumed cursor starts part-way through its sequence: positions count from there.
  taken_ = looked_ = first_looked_ = scanned_ = found_at_ = last_advance_taken_ =
      lookahead_.taken();
  cold_batch_ = options_.cold_batch;
  const uint32_t threads =
      std::max<uint32_t>(1, options_.concurrency.value_or(kMaxAutoConcurrency));
  for (uint32_t i = 0; i < threads; ++i) {
    pool_.emplace_back([this](std::stop_token stop) { Fetch(stop); });
  }
  planner_ = std::jthread([this](std::stop_token stop) { Plan(stop); });
}

Prefetcher::~Prefetcher() {
  planner_.request_stop();
  for (auto& t : pool_) t.request_stop();
  queue_.Close();
  changed_.notify_all();
  planner_.join();
  pool_.clear();  // joins; an Acquire in progress hears the stop and returns kCancelled soon
  for (ShardCache* cache : caches_) cache->SetUpcoming(this, {});  // this reader is done
}

uint64_t Prefetcher::WindowSamples() const {
  return options_.predownload ? *options_.predownload : auto_window_;
}

namespace {

// What the fetches say of the link, for ferry.diagnose and ferry top (whether or not the
// prefetcher tunes itself by it).
void PublishLink(const internal_cache::LinkEstimator& link) {
  metrics::GetGauge("/ferry/stream/bandwidth_bytes_per_s")
      .Set(static_cast<int64_t>(link.bandwidth()));
  metrics::GetGauge("/ferry/stream/fetch_latency_us", metrics::AcrossProcesses::kLargest)
      .Set(static_cast<int64_t>(link.latency_s() * 1e6));
}

}  // namespace

bool Prefetcher::Seeks() const { return !options_.predownload && !options_.cache_limited; }

uint32_t Prefetcher::Concurrency() const {
  if (options_.concurrency) return *options_.concurrency;
  return cold_batch_ ? std::min(auto_concurrency_, kColdBatchConcurrency) : auto_concurrency_;
}

void Prefetcher::Retune() {
  // Samples per shard change in the look-ahead: what one fetch brings (counted as the window
  // grows, not by walking it).
  if (shard_changes_ > 0) {
    shard_samples_ =
        static_cast<double>(looked_ - first_looked_) / static_cast<double>(shard_changes_);
  }
  const double per_shard = std::max(1.0, shard_samples_);
  // Little's law with margin: keep rate x latency x headroom samples ahead; before anything is
  // measured assume half a second per fetch.
  const double latency = link_.measured() ? link_.latency_s() : 0.5;
  const double rate = rate_ > 0 ? rate_ : per_shard;
  double window =
      std::max(rate * latency * internal_cache::LinkEstimator::kHeadroom, 4 * per_shard);
  window = std::min(window, per_shard * 64);
  auto_window_ = static_cast<uint64_t>(std::ceil(window));
  // The same law in bytes: the fetches that keep the link's rate moving. The samples the worker
  // consumes say how much the link carries only while the worker is not waiting for it; in a
  // shuffled order it waits most of epoch 1 (the next sample is usually in a shard not yet
  // local), so the bytes the fetches bring decide as well.
  const double by_bytes = link_.FetchesFor(link_.bandwidth());
  double shards = std::max(window / per_shard, by_bytes);
  if (!warm_ && first_batch_read_) shards = std::max(shards, static_cast<double>(cold_shards_));
  // More than the node's download slots would only wait for them (and count their waits as
  // fetch time).
  const double most = std::min(kMaxAutoConcurrency, options_.node_download_concurrency);
  auto_concurrency_ =
      static_cast<uint32_t>(std::clamp(std::ceil(shards), std::min(4.0, most), most));
  metrics::GetGauge("/ferry/stream/predownload", metrics::AcrossProcesses::kLargest)
      .Set(static_cast<int64_t>(WindowSamples()));
  metrics::GetGauge("/ferry/stream/concurrency", metrics::AcrossProcesses::kLargest)
      .Set(Concurrency());
  PublishLink(link_);
}

uint64_t Prefetcher::ColdSpan() const {
  // Only where the look-ahead may reach past its window (Plan's seek), until a fetch has ended
  // (whether downloaded, found local or failed), and once: after the count the look-ahead goes
  // back to its window.
  if (options_.samples_per_shard <= 0 || !Seeks() || options_.concurrency || warm_ ||
      cold_shards_ != 0) {
    return 0;
  }
  return std::min(kMaxColdSpan, static_cast<uint64_t>(std::ceil(4 * options_.samples_per_shard)));
}

void Prefetcher::CountColdShards(bool ended) {
  const uint64_t span = ColdSpan();
  if (span == 0 || (looked_ < taken_ + span && !ended)) return;
  std::set<ShardKey> shards;
  for (const Run& run : window_) {
    if (run.begin >= taken_ + span) break;
    shards.insert(run.key);
  }
  cold_shards_ = static_cast<uint32_t>(std::max<size_t>(1, shards.size()));
  Retune();
}

void Prefetcher::Start(const ShardKey& key) {
  FetchState& f = fetches_[key];
  f.bytes = shard_bytes_(key);
  ++in_flight_;
  budget_.Started(f.bytes);
  queue_.Push(key);  // never blocks: at most kMaxAutoConcurrency (or concurrency) are queued
}

bool Prefetcher::Local(const ShardKey& key) const {
  auto it = fetches_.find(key);
  return it != fetches_.end() && it->second.done;
}

size_t Prefetcher::ShardsToFetch() const {
  // The distinct shards of the look-ahead are the keys of last_use_ not behind the worker: a
  // walk over shards, not over the samples of window_.
  size_t n = 0;
  for (const auto& [key, last] : last_use_) {
    if (last >= taken_ && !Local(key)) ++n;
  }
  return n;
}

void Prefetcher::Plan(std::stop_token stop) {
  MutexLock lock(mu_);
  while (!stop.stop_requested()) {
    if (budget_.NeedsRecheck(PrefetchBudget::Clock::now())) {
      lock.unlock();  // it may list a folder
      const uint64_t budget = options_.byte_budget();
      lock.lock();
      budget_.Recheck(budget, PrefetchBudget::Clock::now());
    }
    if (!options_.predownload || !options_.concurrency) Retune();
    // Extend the look-ahead to the window - and in auto mode further, while it holds fewer
    // shards still to fetch than may be fetched at once: where every sample may be in another
    // shard (a shuffled order), a window counted in samples would leave the link idle. Not under
    // a cache_limit: a shard stays pinned to its last use in the look-ahead, and a far one would
    // keep read shards pinned, the budget full and eviction short of room.
    // Until a fetch is timed, at least the span the cold start counts its shards over.
    const uint64_t target = taken_ + std::max(WindowSamples(), ColdSpan());
    const bool seek = Seeks();
    size_t to_fetch = seek ? ShardsToFetch() : 0;
    // Where everything ahead is local already (epoch 2), seeking would walk to kMaxLookahead
    // and find nothing: it gives up a window (or two shards, or kSeekSlack samples) past the
    // last shard it found. Not much less: the look-ahead's span also sets how often the worker
    // wakes the planner.
    const uint64_t slack = std::max(
        {WindowSamples(), kSeekSlack, static_cast<uint64_t>(2 * std::max(1.0, shard_samples_))});
    bool ended = false;  // the worker's sequence has no more samples
    while (looked_ < target ||
           (seek && to_fetch < Concurrency() && looked_ < taken_ + kMaxLookahead &&
            looked_ < std::max(found_at_, taken_) + slack)) {
      const auto sample = lookahead_.Next();
      if (!sample) {
        ended = true;
        break;
      }
      const ShardKey key = resolve_(*sample);
      // One lookup per sample: whether the shard is new to the look-ahead, and its last use.
      auto [last, inserted] = last_use_.try_emplace(key, looked_);
      const bool new_in_lookahead = inserted || last->second < taken_;
      last->second = looked_;
      if (new_in_lookahead) {
        upcoming_stale_ = true;
        if (seek && !Local(key)) {
          ++to_fetch;
          found_at_ = looked_;
        }
      }
      if (window_.empty() || !(window_.back().key == key)) {
        ++shard_changes_;
        window_.push_back({looked_, key});
      }
      ++looked_;
    }
    CountColdShards(ended);
    StartWithinLimits();
    if (upcoming_stale_) {
      // Eviction keeps the shards needed soonest, whichever reader of the cache needs them.
      upcoming_stale_ = false;
      std::vector<std::vector<size_t>> upcoming(caches_.size());
      std::set<ShardKey> seen;
      for (const Run& run : window_) {
        ++planner_steps_;
        if (seen.insert(run.key).second) upcoming[run.key.stream].push_back(run.key.shard);
      }
      for (size_t s = 0; s < caches_.size(); ++s) {
        caches_[s]->SetUpcoming(this, std::move(upcoming[s]));
      }
    }
    changed_.wait(lock, stop, [&]() REQUIRES(mu_) { return dirty_; });
    dirty_ = false;
  }
}

void Prefetcher::Fetch(std::stop_token stop) {
  while (auto key = queue_.Pop(stop)) {
    const auto start = std::chrono::steady_clock::now();
    auto handle = caches_[key->stream]->Acquire(key->shard, stop);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MutexLock lock(mu_);
    auto it = fetches_.find(*key);
    if (it == fetches_.end()) continue;  // cannot happen: entries live until done
    FetchState& f = it->second;
    warm_ = true;
    --in_flight_;
    budget_.Landed(f.bytes);
    f.done = true;
    if (!handle) {
      f.error = handle.error();
      // Stopped: the iterator is going away, and nobody will read the shard.
      Log().log(stop.stop_requested() ? spdlog::level::debug : spdlog::level::warn,
                "prefetch of shard {} (stream {}) failed: {}", key->shard, key->stream,
                f.error.ToString());
    } else {
      if (!handle->was_cached()) {
        link_.Record(seconds, f.bytes, in_flight_ + 1);
        PublishLink(link_);
      }
      f.handle = std::move(*handle);
    }
    dirty_ = true;
    changed_.notify_all();
  }
}

void Prefetcher::StartWithinLimits() {
  // In order of first use, from where the last pass stopped: the runs before scanned_ were all
  // started (a fetch that later failed is started again by the Wait that needs it).
  auto it = std::partition_point(window_.begin(), window_.end(), [&](const Run& run) REQUIRES(mu_) {
    return run.begin < scanned_;
  });
  for (; it != window_.end(); ++it) {
    ++planner_steps_;
    if (in_flight_ >= Concurrency()) break;
    if (fetches_.count(it->key) == 0) {
      // Under a cache_limit the budget is what keeps pinned shards from crowding the cache.
      if (!budget_.Fits(shard_bytes_(it->key))) break;
      Start(it->key);
    }
    scanned_ = it->begin + 1;
  }
}

void Prefetcher::Drop(uint64_t position) {
  // A run ends where the next one begins (the last one at looked_).
  while (!window_.empty() && (window_.size() > 1 ? window_[1].begin : looked_) <= position) {
    window_.pop_front();
  }
  for (auto it = fetches_.begin(); it != fetches_.end();) {
    auto last = last_use_.find(it->first);
    const bool behind = last == last_use_.end() || last->second < position;
    if (it->second.done && behind) {
      if (last != last_use_.end()) last_use_.erase(last);
      budget_.Released(it->second.bytes);
      it = fetches_.erase(it);  // unpins
      upcoming_stale_ = true;
    } else {
      ++it;
    }
  }
}

void Prefetcher::Advance(uint64_t position) {
  // Called for every sample: the common case is only a counter. The planner is woken (and pins
  // are dropped) every `stride` samples - often enough to keep the window full, rarely enough
  // that a worker reading from local shards does not pay for a thread hand-off per sample.
  if (position < next_wake_.load(std::memory_order_relaxed)) return;
  MutexLock lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - last_advance_).count();
  if (dt > 0.05 && position > last_advance_taken_) {
    rate_ = internal_cache::Ewma(rate_, static_cast<double>(position - last_advance_taken_) / dt);
    last_advance_ = now;
    last_advance_taken_ = position;
  }
  taken_ = position;
  const uint64_t stride = std::clamp<uint64_t>(
      std::max(WindowSamples(), looked_ > position ? looked_ - position : 0) / 8, 1, 256);
  next_wake_.store(position + stride, std::memory_order_relaxed);
  Drop(position);
  dirty_ = true;
  changed_.notify_all();
}

bool Prefetcher::Ready(const ShardKey& key) {
  MutexLock lock(mu_);
  auto it = fetches_.find(key);
  return it != fetches_.end() && it->second.done && it->second.error.ok();
}

void Prefetcher::Request(const ShardKey& key) {
  MutexLock lock(mu_);
  next_wake_.store(0, std::memory_order_relaxed);
  if (fetches_.count(key) != 0) return;
  last_use_[key] = std::max(last_use_[key], taken_);
  Start(key);
  dirty_ = true;
  changed_.notify_all();
}

uint64_t Prefetcher::PlannerSteps() {
  MutexLock lock(mu_);
  return planner_steps_;
}

void Prefetcher::FirstBatchRead() {
  MutexLock lock(mu_);
  first_batch_read_ = true;
  cold_batch_ = false;
  dirty_ = true;
  changed_.notify_all();
}

bool Prefetcher::Warm() {
  MutexLock lock(mu_);
  return warm_;
}

bool Prefetcher::WaitFetched(MutexLock& lock, const ShardKey& key, uint64_t position,
                             std::optional<std::chrono::milliseconds> timeout) {
  if (fetches_.count(key) == 0) {
    // Outside the window (or the window is still growing): fetch it now, ahead of the rest,
    // pinned up to where it is needed (not earlier, or the next Advance would unpin it).
    last_use_[key] = std::max(last_use_[key], position);
    Start(key);
    dirty_ = true;
    changed_.notify_all();
  }
  const auto start = std::chrono::steady_clock::now();
  auto fetched = [&]() REQUIRES(mu_) {
    auto it = fetches_.find(key);
    return it == fetches_.end() || it->second.done;
  };
  bool done = true;
  if (timeout) {
    done = changed_.wait_for(lock, *timeout, fetched);
  } else {
    changed_.wait(lock, fetched);
  }
  metrics::GetCounter("/ferry/stream/wait_ns")
      .Add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count()));
  return done;
}

bool Prefetcher::AwaitFetched(const ShardKey& key, uint64_t position,
                              std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return WaitFetched(lock, key, position, timeout);
}

Result<ShardHandle> Prefetcher::Wait(const ShardKey& key) {
  {
    MutexLock lock(mu_);
    WaitFetched(lock, key, taken_, std::nullopt);  // the worker reads it at taken_ (Advance)
    auto it = fetches_.find(key);
    if (it != fetches_.end() && !it->second.error.ok()) {
      Status error = it->second.error;
      budget_.Released(it->second.bytes);
      fetches_.erase(it);  // a later Wait tries again
      return error;
    }
  }
  // The prefetcher's pin keeps it local; the caller gets its own (a cache hit, no download).
  return caches_[key.stream]->Acquire(key.shard);
}

}  // namespace ferry::internal_stream
