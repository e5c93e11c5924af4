#include "cache/file_lock.h"

#include <gtest/gtest.h>
#include <sys/file.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/temp_dir_testutil.h"
#include "cache/cache_testutil.h"

namespace ferry::internal_cache {
namespace {

using std::chrono::milliseconds;

bool CanLock(const std::filesystem::path& path, LockMode mode) {
  auto lock = FileLock::TryLock(path, mode);
  EXPECT_TRUE(lock.has_value()) << lock.status().ToString();
  return lock.has_value() && lock->has_value();
}

TEST(FileLock, SharedLocksCoexistAndExcludeExclusive) {
  testing::TempDir tmp;
  const auto path = tmp / "a.lock";
  auto first = FileLock::Lock(path, LockMode::kShared);
  ASSERT_TRUE(first.has_value()) << first.status().ToString();
  EXPECT_TRUE(first->held());
  // Each lock is its own open file description: they conflict even inside one process.
  EXPECT_TRUE(CanLock(path, LockMode::kShared));
  EXPECT_FALSE(CanLock(path, LockMode::kExclusive));
  first->Unlock();
  EXPECT_FALSE(first->held());
  EXPECT_TRUE(CanLock(path, LockMode::kExclusive));
}

TEST(FileLock, ExclusiveExcludesShared) {
  testing::TempDir tmp;
  const auto path = tmp / "a.lock";
  auto lock = FileLock::Lock(path, LockMode::kExclusive);
  ASSERT_TRUE(lock.has_value());
  EXPECT_FALSE(CanLock(path, LockMode::kShared));
  FileLock moved = std::move(*lock);  // the lock travels with the object
  EXPECT_FALSE(CanLock(path, LockMode::kShared));
  moved = FileLock();
  EXPECT_TRUE(CanLock(path, LockMode::kShared));
}

// Blocking in flock, and polling when a stop can be requested: either waits for the holder.
TEST(FileLock, LockWaitsForTheHolder) {
  for (const bool stoppable : {false, true}) {
    SCOPED_TRACE(stoppable ? "stoppable" : "blocking");
    testing::TempDir tmp;
    const auto path = tmp / "a.lock";
    auto held = FileLock::Lock(path, LockMode::kExclusive);
    ASSERT_TRUE(held.has_value());
    std::atomic<bool> acquired{false};
    std::stop_source never;
    std::jthread waiter([&] {
      auto lock = FileLock::Lock(path, LockMode::kShared,
                                 stoppable ? never.get_token() : std::stop_token());
      EXPECT_TRUE(lock.has_value()) << lock.status().ToString();
      EXPECT_TRUE(lock.has_value() && lock->held());
      acquired = true;
    });
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_FALSE(acquired);
    held->Unlock();
    waiter.join();
    EXPECT_TRUE(acquired);
  }
}

// A reader that goes away must not stay blocked behind a download another process holds.
TEST(FileLock, AStopRequestEndsTheWait) {
  testing::TempDir tmp;
  const auto path = tmp / "a.lock";
  auto held = FileLock::Lock(path, LockMode::kExclusive);
  ASSERT_TRUE(held.has_value());
  std::stop_source stop;
  Status waited;
  std::atomic<bool> done{false};
  std::jthread waiter([&] {
    auto lock = FileLock::Lock(path, LockMode::kShared, stop.get_token());
    waited = lock.status();
    done = true;
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(done);
  stop.request_stop();
  for (int i = 0; i < 500 && !done; ++i) std::this_thread::sleep_for(milliseconds(10));
  const bool ended_by_stop = done;
  EXPECT_FALSE(CanLock(path, LockMode::kShared));  // still the holder's
  held->Unlock();  // so that a waiter deaf to the stop fails this test instead of hanging it
  waiter.join();
  ASSERT_TRUE(ended_by_stop);
  EXPECT_EQ(waited.code(), StatusCode::kCancelled) << waited.ToString();
  EXPECT_NE(waited.message().find(path.string()), std::string::npos) << waited.ToString();
}

TEST(FileLock, ReleasedDescriptorStaysLockedUntilUnlockAndClose) {
  testing::TempDir tmp;
  const auto path = tmp / "a.lock";
  auto lock = FileLock::Lock(path, LockMode::kShared);
  ASSERT_TRUE(lock.has_value());
  const int fd = lock->Release();
  EXPECT_FALSE(lock->held());
  *lock = FileLock();  // destroying the emptied object does not unlock
  EXPECT_FALSE(CanLock(path, LockMode::kExclusive));
  UnlockAndClose(fd);
  EXPECT_TRUE(CanLock(path, LockMode::kExclusive));
  UnlockAndClose(-1);  // no-op
}

TEST(FileLock, UnlockReleasesEvenWhenAForkedChildSharesTheDescriptor) {
  testing::TempDir tmp;
  const auto path = tmp / "a.lock";
  auto lock = FileLock::Lock(path, LockMode::kExclusive);
  ASSERT_TRUE(lock.has_value());
  testing::Children children;
  testing::Pipe done;
  // The child inherits the descriptor (as a torch worker would) and keeps it open.
  const pid_t child = children.Spawn([&] {
    done.Receive();
    return 0;
  });
  lock->Unlock();
  EXPECT_TRUE(CanLock(path, LockMode::kExclusive));
  done.Send();
  EXPECT_EQ(children.Wait(child), 0);
}

TEST(FileLock, ALockDiesWithItsProcess) {
  testing::TempDir tmp;
  const auto path = tmp / "a.lock";
  testing::Children children;
  testing::Pipe locked;
  const pid_t child = children.Spawn([&] {
    auto lock = FileLock::Lock(path, LockMode::kExclusive);
    if (!lock) return 1;
    locked.Send();
    ::pause();  // until killed
    return 0;
  });
  ASSERT_TRUE(locked.Receive());
  EXPECT_FALSE(CanLock(path, LockMode::kShared));
  children.Kill(child);
  EXPECT_TRUE(CanLock(path, LockMode::kExclusive));
}

TEST(FileLock, MissingFolderIsNotFoundNamingThePath) {
  testing::TempDir tmp;
  const auto path = tmp / "no" / "a.lock";
  auto lock = FileLock::Lock(path, LockMode::kShared);
  ASSERT_FALSE(lock.has_value());
  EXPECT_EQ(lock.error().code(), StatusCode::kNotFound);
  EXPECT_NE(lock.error().message().find(path.string()), std::string::npos);
  auto tried = FileLock::TryLock(path, LockMode::kExclusive);
  ASSERT_FALSE(tried.has_value());
  EXPECT_EQ(tried.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ferry::internal_cache
