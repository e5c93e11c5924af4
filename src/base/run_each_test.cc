// Tests of RunEach: every index once, never more threads than asked, the caller's own thread
// when one is asked for.
#include "base/run_each.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "base/in_flight_counter_testutil.h"

namespace ferry {
namespace {

TEST(RunEachTest, CallsEveryIndexOnceWithinTheThreadsGiven) {
  for (const size_t threads : {size_t{1}, size_t{3}, size_t{64}}) {
    SCOPED_TRACE(threads);
    std::mutex mu;
    std::multiset<size_t> seen;
    testing::InFlightCounter running;
    RunEach(20, threads, [&](size_t i) {
      running.Enter();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      running.Leave();
      std::lock_guard lock(mu);
      seen.insert(i);
    });
    ASSERT_EQ(seen.size(), 20u);
    for (size_t i = 0; i < 20; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
    EXPECT_LE(running.most.load(), static_cast<int>(std::min<size_t>(threads, 20)));
    if (threads > 1) {
      EXPECT_GE(running.most.load(), 2) << "the calls overlap";
    }
  }
}

TEST(RunEachTest, OneThreadOrOneIndexRunsOnTheCallersThread) {
  for (const auto& [count, threads] : {std::pair{size_t{5}, size_t{1}}, {size_t{1}, size_t{8}}}) {
    std::set<std::thread::id> ids;
    RunEach(count, threads, [&](size_t) { ids.insert(std::this_thread::get_id()); });
    EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
  }
  RunEach(0, 4, [](size_t) { ADD_FAILURE() << "no index to run"; });
}

}  // namespace
}  // namespace ferry
