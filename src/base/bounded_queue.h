// BoundedQueue<T>: a fixed-capacity FIFO between pipeline stages.
//
// Push blocks while the queue is full, Pop while it is empty; both wake when the queue is
// closed or the caller's stop_token is triggered. Close() lets consumers drain what is left,
// then Pop returns nullopt. The bound is what keeps memory in check when a producer is faster
// than its consumer.
//
// Thread-safety: any number of producers and consumers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <optional>
#include <stop_token>
#include <utility>

#include "base/mutex.h"

namespace ferry {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// False when the queue was closed or `stop` was requested (the item is dropped).
  bool Push(T item, std::stop_token stop = {}) {
    MutexLock lock(mu_);
    if (!not_full_.wait(lock, stop,
                        [&]() REQUIRES(mu_) { return closed_ || items_.size() < capacity_; })) {
      return false;
    }
    if (closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  /// The next item; nullopt once the queue is closed and drained, or when `stop` is requested.
  std::optional<T> Pop(std::stop_token stop = {}) {
    MutexLock lock(mu_);
    if (!not_empty_.wait(lock, stop, [&]() REQUIRES(mu_) { return closed_ || !items_.empty(); })) {
      return std::nullopt;
    }
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  /// Pop waiting at most `timeout`: nullopt on timeout, or once closed and drained (then
  /// `drained` is set) - for a consumer that must look up now and then (at a Ctrl+C, say).
  template <typename Rep, typename Period>
  std::optional<T> PopFor(std::chrono::duration<Rep, Period> timeout, bool& drained) {
    MutexLock lock(mu_);
    drained = false;
    if (!not_empty_.wait_for(lock, timeout,
                             [&]() REQUIRES(mu_) { return closed_ || !items_.empty(); })) {
      return std::nullopt;
    }
    if (items_.empty()) {
      drained = true;
      return std::nullopt;
    }
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  /// No more pushes; consumers drain the rest.
  void Close() {
    MutexLock lock(mu_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  size_t size() const {
    MutexLock lock(mu_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  std::condition_variable_any not_full_;
  std::condition_variable_any not_empty_;
  std::deque<T> items_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace ferry
