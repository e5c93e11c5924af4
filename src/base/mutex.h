// Mutex and MutexLock: std::mutex and a scoped lock that clang's thread-safety analysis can see
// (base/thread_annotations.h), so that GUARDED_BY / REQUIRES on what a mutex protects are
// checked rather than written as prose.
//
// A condition variable waits on a MutexLock: it is BasicLockable, so std::condition_variable_any
// unlocks and relocks it around the wait (stop tokens included). A predicate that reads guarded
// members is a lambda marked REQUIRES(mu), which is true: the wait calls it with the lock held.
//
// Thread-safety: a Mutex is shared between threads; a MutexLock belongs to the thread that made
// it.
#pragma once

#include <mutex>

#include "base/thread_annotations.h"

namespace ferry {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  std::mutex mu_;
};

/// Holds `mu` from construction to destruction, less the spans between unlock() and lock().
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    held_ = false;
    mu_.unlock();
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

}  // namespace ferry
