// FetchAhead: fetches the files of a known sequence ahead of the one thread that reads them,
// many at once, and hands them over in sequence order.
//
// Pool threads (std::jthreads, started as the concurrency asks for them) take the next position
// past those already dispatched while fewer than `concurrency` fetches run and the bytes
// dispatched but not yet taken (by the listing's sizes) stay within max_bytes_in_flight (one
// file is always allowed, however large); each fetch's result - the bytes or an error - waits in
// its slot until Next reaches it, so errors come out in sequence order too.
//
// With concurrency unset (auto), every completed fetch is recorded by a LinkEstimator, and the
// concurrency becomes AutoConcurrency of it: Little's law, the requests in flight that keep
// target_bytes_per_s moving. It may grow at most twofold per adjustment, so one slow outlier
// does not open the floodgates.
//
// Thread-safety: Next and the accessors are for the one reading thread; the rest is internal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "cache/link_estimator.h"
#include "ferry/result.h"

namespace ferry::internal_files {

inline constexpr uint32_t kMinAutoConcurrency = 8;

/// Requests in flight for `target_bytes_per_s` over `link`: ceil(link.FetchesFor(target)),
/// within [min, max] and within what `max_bytes_in_flight` holds of files of the mean size.
uint32_t AutoConcurrency(const internal_cache::LinkEstimator& link, uint64_t target_bytes_per_s,
                         uint64_t max_bytes_in_flight, uint32_t min_concurrency,
                         uint32_t max_concurrency);

struct FetchAheadOptions {
  std::optional<uint32_t> concurrency;  // nullopt: auto
  uint32_t max_concurrency = 256;
  uint64_t target_bytes_per_s = uint64_t{1} << 30;
  uint64_t max_bytes_in_flight = uint64_t{256} << 20;
};

class FetchAhead {
 public:
  /// Fetches one file (runs on pool threads, many at once). `stop` is requested when the
  /// FetchAhead goes away: a long fetch should end then (kCancelled), not make it wait.
  using FetchFn = std::function<Result<std::string>(uint64_t file, std::stop_token stop)>;

  /// `files` is the sequence; `size_of(file)` its expected bytes (for the byte bound).
  FetchAhead(std::vector<uint64_t> files, FetchFn fetch,
             std::function<uint64_t(uint64_t file)> size_of, FetchAheadOptions options);
  ~FetchAhead();
  FetchAhead(const FetchAhead&) = delete;
  FetchAhead& operator=(const FetchAhead&) = delete;

  /// The next file of the sequence and its fetch result (blocking until it is fetched); nullopt
  /// after the last.
  std::optional<std::pair<uint64_t, Result<std::string>>> Next();
  /// Waits up to `timeout` for the file Next would wait for; true when Next will not wait.
  bool AwaitNext(std::chrono::milliseconds timeout);

  /// Positions of the sequence not yet returned.
  uint64_t remaining() const;
  /// The concurrency now in force.
  uint32_t concurrency() const;

 private:
  void Run(std::stop_token stop);
  // True when the position `dispatched_` may start now.
  bool CanDispatch() const REQUIRES(mu_);
  // True when the file Next hands over next has been fetched.
  bool NextFetched() const REQUIRES(mu_) { return !slots_.empty() && slots_.front().has_value(); }
  void Adjust(double latency_s, uint64_t bytes) REQUIRES(mu_);

  const std::vector<uint64_t> files_;
  const FetchFn fetch_;
  const std::function<uint64_t(uint64_t)> size_of_;
  const FetchAheadOptions options_;

  mutable Mutex mu_;
  std::condition_variable_any cv_;
  uint64_t next_ GUARDED_BY(mu_) = 0;  // position Next returns next
  // Positions [next_, dispatched_) are fetching or fetched
  uint64_t dispatched_ GUARDED_BY(mu_) = 0;
  std::deque<std::optional<Result<std::string>>> slots_ GUARDED_BY(mu_);  // by position - next_
  uint32_t running_ GUARDED_BY(mu_) = 0;
  uint64_t bytes_ahead_ GUARDED_BY(mu_) = 0;  // listing sizes of positions [next_, dispatched_)
  uint32_t concurrency_ GUARDED_BY(mu_) = 0;
  internal_cache::LinkEstimator link_ GUARDED_BY(mu_);
  uint64_t completed_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::jthread> threads_;  // last: stopped and joined first
};

}  // namespace ferry::internal_files
