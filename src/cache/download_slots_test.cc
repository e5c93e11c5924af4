#include "cache/download_slots.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "base/in_flight_counter_testutil.h"
#include "base/stoppable_sleep.h"
#include "base/temp_dir_testutil.h"
#include "cache/cache_testutil.h"

namespace ferry::internal_cache {
namespace {

using namespace std::chrono_literals;

// Take, given up after `after` when no slot frees: the slot, or the error (kCancelled).
Result<FileLock> TakeWithin(DownloadSlots& slots, std::chrono::milliseconds after) {
  std::stop_source stop;
  std::jthread timer([&](std::stop_token done) {
    if (SleepUnlessStopped(after, done)) stop.request_stop();
  });
  auto slot = slots.Take(stop.get_token());
  timer.request_stop();
  return slot;
}

TEST(DownloadSlotsTest, EachSlotIsHeldOnceAndAFreedOneGoesToAWaiter) {
  testing::TempDir tmp;
  auto opened = DownloadSlots::Open(tmp / "slots", 2);
  ASSERT_TRUE(opened.has_value()) << opened.status().ToString();
  DownloadSlots& slots = **opened;
  auto a = slots.Take();
  auto b = slots.Take();
  ASSERT_TRUE(a.has_value() && b.has_value());
  // Threads of one process conflict as processes do: a third waits, and hears its stop.
  auto third = TakeWithin(slots, 100ms);
  ASSERT_FALSE(third.has_value());
  EXPECT_EQ(third.error().code(), StatusCode::kCancelled);
  EXPECT_NE(third.error().message().find((tmp / "slots").string()), std::string::npos);
  // Another DownloadSlots on the folder (another reader) sees them taken as well.
  auto other = DownloadSlots::Open(tmp / "slots", 2);
  ASSERT_TRUE(other.has_value());
  EXPECT_FALSE(TakeWithin(**other, 50ms).has_value());
  // A waiter gets the slot that is given back.
  auto waiter = std::async(std::launch::async, [&] { return (*other)->Take(); });
  EXPECT_EQ(waiter.wait_for(100ms), std::future_status::timeout);
  a->Unlock();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get().has_value());
}

TEST(DownloadSlotsTest, TheSlotOfAKilledProcessFreesItself) {
  testing::TempDir tmp;
  testing::Children children;
  testing::Pipe taken;
  const pid_t child = children.Spawn([&] {
    auto slots = DownloadSlots::Open(tmp / "slots", 1);
    if (!slots) return 1;
    auto slot = (*slots)->Take();
    if (!slot) return 2;
    taken.Send();
    ::pause();  // until killed, mid-"download"
    return 0;
  });
  ASSERT_TRUE(taken.Receive());
  auto slots = DownloadSlots::Open(tmp / "slots", 1);
  ASSERT_TRUE(slots.has_value());
  EXPECT_FALSE(TakeWithin(**slots, 100ms).has_value()) << "the child holds the only slot";
  children.Kill(child);
  EXPECT_TRUE(TakeWithin(**slots, 10s).has_value());
}

TEST(DownloadSlotsTest, ACountOutsideOneTo1024IsAnErrorNamingTheFolder) {
  testing::TempDir tmp;
  for (const uint32_t n : {0u, kMaxDownloadSlots + 1}) {
    auto slots = DownloadSlots::Open(tmp / "slots", n);
    ASSERT_FALSE(slots.has_value());
    EXPECT_EQ(slots.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(slots.error().message().find((tmp / "slots").string()), std::string::npos);
  }
}

TEST(DownloadSlotsTest, ManyWaitersShareFewSlotsAndAllGetOne) {
  // 16 threads through 2 slots, each holding one for a moment: at most 2 at once, and every
  // thread gets its turn (the threads beyond two wait without polling).
  testing::TempDir tmp;
  auto opened = DownloadSlots::Open(tmp / "slots", 2);
  ASSERT_TRUE(opened.has_value());
  testing::InFlightCounter holding;
  std::atomic<int> done{0};
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < 16; ++i) {
      threads.emplace_back([&] {
        auto slot = (*opened)->Take();
        if (!slot) return;
        holding.Enter();
        std::this_thread::sleep_for(5ms);
        holding.Leave();
        ++done;
      });
    }
  }
  EXPECT_EQ(done, 16);
  EXPECT_EQ(holding.most, 2);
}

}  // namespace
}  // namespace ferry::internal_cache
