#include "base/fork_guard.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

namespace ferry {
namespace {

struct Guarded {
  Mutex* mu = nullptr;
  void (*in_child)() = nullptr;
};

// A fixed table: registering must not allocate under a lock a fork handler could need.
constexpr size_t kMaxGuarded = 16;
std::array<Guarded, kMaxGuarded> guarded;
std::atomic<size_t> count{0};
std::mutex registering;

void Prepare() NO_THREAD_SAFETY_ANALYSIS {
  const size_t n = count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) guarded[i].mu->lock();
}

void InParent() NO_THREAD_SAFETY_ANALYSIS {
  const size_t n = count.load(std::memory_order_acquire);
  for (size_t i = n; i-- > 0;) guarded[i].mu->unlock();
}

void InChild() NO_THREAD_SAFETY_ANALYSIS {
  const size_t n = count.load(std::memory_order_acquire);
  for (size_t i = n; i-- > 0;) {
    if (guarded[i].in_child != nullptr) guarded[i].in_child();
    guarded[i].mu->unlock();
  }
}

}  // namespace

void LockAcrossFork(Mutex& mu, void (*in_child)()) {
  std::lock_guard lock(registering);
  static const bool installed = [] {
    ::pthread_atfork(Prepare, InParent, InChild);
    return true;
  }();
  (void)installed;
  const size_t n = count.load(std::memory_order_relaxed);
  if (n == kMaxGuarded) std::abort();  // a programming error: raise kMaxGuarded
  guarded[n] = {.mu = &mu, .in_child = in_child};
  count.store(n + 1, std::memory_order_release);
}

}  // namespace ferry
