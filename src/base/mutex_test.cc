#include "base/mutex.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <stop_token>
#include <thread>

namespace ferry {
namespace {

struct Counter {
  Mutex mu;
  std::condition_variable_any changed;
  int value GUARDED_BY(mu) = 0;
};

// Whether another thread could take `mu` now (try_lock by the holder itself is undefined).
bool FreeForOthers(Mutex& mu) {
  bool free = false;
  std::jthread([&]() NO_THREAD_SAFETY_ANALYSIS {  // a probe: takes and drops it, or does not
    free = mu.try_lock();
    if (free) mu.unlock();
  })
      .join();
  return free;
}

TEST(MutexTest, ALockIsHeldForItsScopeOnly) {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_FALSE(FreeForOthers(mu));
  }
  EXPECT_TRUE(FreeForOthers(mu));
}

TEST(MutexTest, UnlockLetsOthersInAndLockTakesItBack) {
  Mutex mu;
  MutexLock lock(mu);
  lock.unlock();
  EXPECT_TRUE(FreeForOthers(mu));
  lock.lock();
  EXPECT_FALSE(FreeForOthers(mu));
}

TEST(MutexTest, AConditionVariableWaitsOnAMutexLock) {
  Counter counter;
  std::jthread bumper([&] {
    for (int i = 0; i < 3; ++i) {
      MutexLock lock(counter.mu);
      ++counter.value;
      counter.changed.notify_all();
    }
  });
  MutexLock lock(counter.mu);
  counter.changed.wait(lock, [&]() REQUIRES(counter.mu) { return counter.value == 3; });
  EXPECT_EQ(counter.value, 3);
}

TEST(MutexTest, AStopRequestEndsAWait) {
  Counter counter;
  std::stop_source stop;
  std::jthread stopper([&] { stop.request_stop(); });
  MutexLock lock(counter.mu);
  const bool met = counter.changed.wait(lock, stop.get_token(),
                                        [&]() REQUIRES(counter.mu) { return counter.value > 0; });
  EXPECT_FALSE(met);
  EXPECT_FALSE(FreeForOthers(counter.mu));  // the wait hands the lock back held
}

}  // namespace
}  // namespace ferry
