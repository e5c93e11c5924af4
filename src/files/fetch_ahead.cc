#include "files/fetch_ahead.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "ferry/metrics/metrics.h"

namespace ferry::internal_files {
namespace {

metrics::Gauge& ConcurrencyGauge() {
  static metrics::Gauge& gauge =
      metrics::GetGauge("/ferry/files/concurrency", metrics::AcrossProcesses::kLargest);
  return gauge;
}

}  // namespace

uint32_t AutoConcurrency(const internal_cache::LinkEstimator& link, uint64_t target_bytes_per_s,
                         uint64_t max_bytes_in_flight, uint32_t min_concurrency,
                         uint32_t max_concurrency) {
  const double mean = std::max(link.mean_bytes(), 1.0);
  const double wanted = std::ceil(link.FetchesFor(static_cast<double>(target_bytes_per_s)));
  const double by_bytes =
      std::max(1.0, std::floor(static_cast<double>(max_bytes_in_flight) / mean));
  const double upper = std::min<double>(max_concurrency, by_bytes);
  const double lower = std::min<double>(min_concurrency, upper);
  return static_cast<uint32_t>(std::clamp(wanted, lower, upper));
}

FetchAhead::FetchAhead(std::vector<uint64_t> files, FetchFn fetch,
                       std::function<uint64_t(uint64_t)> size_of, FetchAheadOptions options)
    : files_(std::move(files)),
      fetch_(std::move(fetch)),
      size_of_(std::move(size_of)),
      options_(options) {
  concurrency_ = std::max<uint32_t>(
      1, options_.concurrency.value_or(std::min(kMinAutoConcurrency, options_.max_concurrency)));
  ConcurrencyGauge().Set(concurrency_);
  // Threads are started as the concurrency asks for them (Adjust), never more than the files.
  const size_t start = std::min<size_t>(concurrency_, files_.size());
  // Under mu_: a thread that completes a fetch may add threads (Adjust) while we still do.
  MutexLock lock(mu_);
  threads_.reserve(start);
  for (size_t i = 0; i < start; ++i) {
    threads_.emplace_back([this](std::stop_token stop) { Run(stop); });
  }
}

FetchAhead::~FetchAhead() {
  {
    MutexLock lock(mu_);
    stopping_ = true;  // Adjust starts no thread from now on
    for (auto& t : threads_) t.request_stop();
  }
  cv_.notify_all();
  threads_.clear();  // joins; a fetch in progress hears the stop (FetchFn)
}

uint64_t FetchAhead::remaining() const {
  MutexLock lock(mu_);
  return files_.size() - next_;
}

uint32_t FetchAhead::concurrency() const {
  MutexLock lock(mu_);
  return concurrency_;
}

bool FetchAhead::CanDispatch() const {
  if (dispatched_ >= files_.size() || running_ >= concurrency_) return false;
  if (dispatched_ == next_) return true;  // the file the reader waits for always goes
  // A bound on slots too, so that a run of empty files cannot queue without end.
  if (dispatched_ - next_ >= uint64_t{8} * std::max<uint32_t>(concurrency_, 16)) return false;
  return bytes_ahead_ + size_of_(files_[dispatched_]) <= options_.max_bytes_in_flight;
}

void FetchAhead::Adjust(double latency_s, uint64_t bytes) {
  ++completed_;
  link_.Record(latency_s, bytes, running_ + 1);
  if (options_.concurrency || completed_ % 16 != 0) return;
  const uint32_t wanted =
      AutoConcurrency(link_, options_.target_bytes_per_s, options_.max_bytes_in_flight,
                      kMinAutoConcurrency, options_.max_concurrency);
  const uint32_t next = std::min(wanted, concurrency_ * 2);
  if (next == concurrency_) return;
  concurrency_ = next;
  ConcurrencyGauge().Set(concurrency_);
  // Threads are added under mu_ and never once the destructor has begun (stopping_).
  if (stopping_) return;
  const size_t want_threads = std::min<size_t>(concurrency_, files_.size());
  while (threads_.size() < want_threads) {
    threads_.emplace_back([this](std::stop_token stop) { Run(stop); });
  }
}

void FetchAhead::Run(std::stop_token stop) {
  MutexLock lock(mu_);
  while (!stop.stop_requested()) {
    if (!cv_.wait(lock, stop, [&]() REQUIRES(mu_) { return CanDispatch(); })) return;
    const uint64_t position = dispatched_++;
    const uint64_t file = files_[position];
    bytes_ahead_ += size_of_(file);
    slots_.emplace_back();
    ++running_;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Result<std::string> result = fetch_(file, stop);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    --running_;
    if (result) Adjust(seconds, result->size());
    slots_[position - next_] = std::move(result);
    cv_.notify_all();
  }
}

bool FetchAhead::AwaitNext(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  if (next_ >= files_.size()) return true;
  cv_.notify_all();  // dispatching may wait on this reader
  return cv_.wait_for(lock, timeout, [&]() REQUIRES(mu_) { return NextFetched(); });
}

std::optional<std::pair<uint64_t, Result<std::string>>> FetchAhead::Next() {
  MutexLock lock(mu_);
  if (next_ >= files_.size()) return std::nullopt;
  cv_.notify_all();  // dispatching may wait on this reader
  cv_.wait(lock, [&]() REQUIRES(mu_) { return NextFetched(); });
  Result<std::string> result = std::move(*slots_.front());
  slots_.pop_front();
  const uint64_t file = files_[next_++];
  bytes_ahead_ -= std::min(bytes_ahead_, size_of_(file));
  cv_.notify_all();
  return std::make_pair(file, std::move(result));
}

}  // namespace ferry::internal_files
