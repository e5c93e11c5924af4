// PrefetchBudget: the bytes one prefetcher may have ahead of its worker. A shard counts from
// the start of its fetch until it lands (in flight) and, under a cache_limit, until the worker
// has read it (ahead: fetched and pinned). The cap is max_bytes_in_flight, tightened by
// `byte_budget` - this reader's share of the cache folder's limit (CacheBudget), asked again
// every 250 ms as readers come and go. A shard larger than the whole cap still fits once nothing
// else is ahead, or it could never be fetched.
//
// Thread-safety: none; the prefetcher's lock guards it. `byte_budget` is called by the owner,
// off its lock (it may list a folder): NeedsRecheck says when, Recheck takes the answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace ferry::internal_stream {

class PrefetchBudget {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kRecheckInterval = std::chrono::milliseconds(250);

  /// `cache_limited`: pinned shards count against the cap (they crowd a limited cache); without
  /// a limit every shard stays anyway and only those in flight count.
  PrefetchBudget(uint64_t max_bytes_in_flight, bool cache_limited,
                 std::function<uint64_t()> byte_budget);

  /// Whether a shard of `bytes` may start now.
  bool Fits(uint64_t bytes) const;
  void Started(uint64_t bytes);   // its fetch began
  void Landed(uint64_t bytes);    // its fetch ended (done or failed): no longer in flight
  void Released(uint64_t bytes);  // read or given up: no longer ahead

  /// True when byte_budget should be asked again (never when there is none).
  bool NeedsRecheck(Clock::time_point now) const;
  /// What byte_budget said, asked at `now`.
  void Recheck(uint64_t budget, Clock::time_point now);
  const std::function<uint64_t()>& byte_budget() const { return byte_budget_; }

  uint64_t in_flight() const { return in_flight_; }
  uint64_t ahead() const { return ahead_; }
  uint64_t cap() const { return cap_; }

 private:
  const uint64_t max_bytes_in_flight_;
  const bool cache_limited_;
  const std::function<uint64_t()> byte_budget_;
  uint64_t in_flight_ = 0;
  uint64_t ahead_ = 0;  // in flight + fetched and pinned
  uint64_t cap_;        // max_bytes_in_flight, or less as byte_budget says
  Clock::time_point checked_{};
};

}  // namespace ferry::internal_stream
