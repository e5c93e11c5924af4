#include "base/fork_guard.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace ferry {
namespace {

Mutex guarded_mu;
int guarded_value GUARDED_BY(guarded_mu) = 0;

void ResetInChild() NO_THREAD_SAFETY_ANALYSIS { guarded_value = -1; }

// A thread holding the mutex at the moment of fork() would leave it locked forever in the
// child; held across the fork, the child gets it unlocked, after its hook ran.
TEST(LockAcrossFork, TheChildGetsTheMutexUnlockedAfterItsHook) {
  LockAcrossFork(guarded_mu, ResetInChild);
  std::atomic<bool> stop{false};
  std::jthread busy([&] {
    while (!stop) {
      MutexLock lock(guarded_mu);
      ++guarded_value;
    }
  });
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Without the guard, a fork that caught the busy thread inside leaves it locked here.
      if (!guarded_mu.try_lock()) ::_exit(1);
      const int value = guarded_value;
      guarded_mu.unlock();
      ::_exit(value == -1 ? 0 : 2);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "round " << round;
  }
  stop = true;
}

}  // namespace
}  // namespace ferry
