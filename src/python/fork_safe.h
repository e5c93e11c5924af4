// ForkSafe<T>: owns a native object that has threads (a dataset's stores and transport, an
// iterator's prefetcher, a loader's workers) on behalf of a Python object.
//
// torch's DataLoader forks worker processes, and a child inherits every Python object of its
// parent - but none of the parent's threads. Destroying such an object in the child would join
// threads that do not exist there and hang forever. So an object is destroyed only in the
// process that created it; in any other it is deliberately leaked (its memory is the parent's
// copy-on-write pages, and the child never uses it).
#pragma once

#include <unistd.h>

#include <memory>
#include <utility>

namespace ferry::python {

template <typename Holder>
class ForkSafe {
 public:
  ForkSafe() = default;
  explicit ForkSafe(Holder value) : value_(std::move(value)), pid_(::getpid()) {}
  ForkSafe(ForkSafe&&) = default;
  ForkSafe& operator=(ForkSafe&&) = default;
  ~ForkSafe() { LeakIfForked(); }

  Holder& get() { return value_; }
  const Holder& get() const { return value_; }
  /// True in the process that created the object.
  bool owned_here() const { return pid_ == ::getpid(); }

  /// Destroys the object now (in its own process) or leaks it (in a forked child).
  void reset() {
    LeakIfForked();
    value_ = Holder();
  }

 private:
  void LeakIfForked() {
    if (value_ && !owned_here()) new Holder(std::move(value_));
  }

  Holder value_{};
  pid_t pid_ = 0;
};

}  // namespace ferry::python
