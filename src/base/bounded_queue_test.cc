#include "base/bounded_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

namespace ferry {
namespace {

using namespace std::chrono_literals;

// How long a call must stay blocked before we believe it blocks. Each test waits this at most
// a couple of times, so the whole suite sleeps well under a second.
constexpr auto kStillBlocked = 50ms;
// How long we wait for a call that must return. Generous because sanitizers and a loaded
// machine slow threads down; a passing run never waits this long.
constexpr auto kMustFinish = 10s;

// Closes the queue when a test exits early (a failed ASSERT), so that a thread still blocked
// in Push or Pop returns and its jthread can be joined instead of hanging the suite. Declare it
// after the thread: it is destroyed, and closes, first.
template <typename T>
class CloseOnExit {
 public:
  explicit CloseOnExit(BoundedQueue<T>& q) : q_(q) {}
  ~CloseOnExit() { q_.Close(); }

 private:
  BoundedQueue<T>& q_;
};

TEST(BoundedQueueTest, FifoOrderAndSize) {
  BoundedQueue<int> q(3);
  EXPECT_EQ(q.capacity(), 3u);
  EXPECT_EQ(q.size(), 0u);
  EXPECT_TRUE(q.Push(1));
  EXPECT_TRUE(q.Push(2));
  EXPECT_TRUE(q.Push(3));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.Pop(), 1);
  EXPECT_TRUE(q.Push(4));
  EXPECT_EQ(q.Pop(), 2);
  EXPECT_EQ(q.Pop(), 3);
  EXPECT_EQ(q.Pop(), 4);
  EXPECT_EQ(q.size(), 0u);
}

TEST(BoundedQueueTest, ZeroCapacityMeansOne) {
  BoundedQueue<int> q(0);
  EXPECT_EQ(q.capacity(), 1u);
  EXPECT_TRUE(q.Push(1));
  // Full now: a push that must not wait gives up instead of adding a second item.
  std::stop_source stopped;
  stopped.request_stop();
  EXPECT_FALSE(q.Push(2, stopped.get_token()));
  EXPECT_EQ(q.size(), 1u);
}

TEST(BoundedQueueTest, MoveOnlyItems) {
  BoundedQueue<std::unique_ptr<int>> q(2);
  EXPECT_TRUE(q.Push(std::make_unique<int>(1)));
  EXPECT_TRUE(q.Push(std::make_unique<int>(2)));
  std::optional<std::unique_ptr<int>> a = q.Pop();
  ASSERT_TRUE(a.has_value() && *a != nullptr);
  EXPECT_EQ(**a, 1);
  std::optional<std::unique_ptr<int>> b = q.Pop();
  ASSERT_TRUE(b.has_value() && *b != nullptr);
  EXPECT_EQ(**b, 2);
}

TEST(BoundedQueueTest, PushBlocksWhileFullUntilAPop) {
  BoundedQueue<int> q(2);
  ASSERT_TRUE(q.Push(1));
  ASSERT_TRUE(q.Push(2));
  std::promise<bool> pushed;
  std::future<bool> result = pushed.get_future();
  std::jthread producer([&] { pushed.set_value(q.Push(3)); });
  CloseOnExit close(q);

  EXPECT_EQ(result.wait_for(kStillBlocked), std::future_status::timeout);
  EXPECT_EQ(q.size(), 2u);  // never more than the capacity

  EXPECT_EQ(q.Pop(), 1);
  ASSERT_EQ(result.wait_for(kMustFinish), std::future_status::ready);
  EXPECT_TRUE(result.get());
  EXPECT_EQ(q.Pop(), 2);
  EXPECT_EQ(q.Pop(), 3);
}

TEST(BoundedQueueTest, PopBlocksWhileEmptyUntilAPush) {
  BoundedQueue<int> q(2);
  std::promise<std::optional<int>> popped;
  std::future<std::optional<int>> result = popped.get_future();
  std::jthread consumer([&] { popped.set_value(q.Pop()); });
  CloseOnExit close(q);

  EXPECT_EQ(result.wait_for(kStillBlocked), std::future_status::timeout);
  EXPECT_TRUE(q.Push(7));
  ASSERT_EQ(result.wait_for(kMustFinish), std::future_status::ready);
  EXPECT_EQ(result.get(), 7);
}

TEST(BoundedQueueTest, CloseDrainsThenPopReturnsNullopt) {
  BoundedQueue<int> q(4);
  ASSERT_TRUE(q.Push(1));
  ASSERT_TRUE(q.Push(2));
  q.Close();
  EXPECT_FALSE(q.Push(3));  // no pushes after Close
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.Pop(), 1);
  EXPECT_EQ(q.Pop(), 2);
  EXPECT_EQ(q.Pop(), std::nullopt);
  EXPECT_EQ(q.Pop(), std::nullopt);  // and it stays that way
}

TEST(BoundedQueueTest, PopForTimesOutThenTakesThenReportsDrained) {
  BoundedQueue<int> q(2);
  bool drained = true;
  EXPECT_EQ(q.PopFor(std::chrono::milliseconds(5), drained), std::nullopt);
  EXPECT_FALSE(drained);  // a timeout, not the end
  ASSERT_TRUE(q.Push(7));
  EXPECT_EQ(q.PopFor(std::chrono::milliseconds(5), drained), 7);
  EXPECT_FALSE(drained);
  q.Close();
  EXPECT_EQ(q.PopFor(std::chrono::seconds(5), drained), std::nullopt);
  EXPECT_TRUE(drained);
}

TEST(BoundedQueueTest, CloseWakesABlockedPop) {
  BoundedQueue<int> q(1);
  std::promise<std::optional<int>> popped;
  std::future<std::optional<int>> result = popped.get_future();
  std::jthread consumer([&] { popped.set_value(q.Pop()); });
  CloseOnExit close(q);

  EXPECT_EQ(result.wait_for(kStillBlocked), std::future_status::timeout);
  q.Close();
  ASSERT_EQ(result.wait_for(kMustFinish), std::future_status::ready);
  EXPECT_EQ(result.get(), std::nullopt);
}

TEST(BoundedQueueTest, CloseWakesABlockedPushAndDropsItsItem) {
  BoundedQueue<int> q(1);
  ASSERT_TRUE(q.Push(1));
  std::promise<bool> pushed;
  std::future<bool> result = pushed.get_future();
  std::jthread producer([&] { pushed.set_value(q.Push(2)); });
  CloseOnExit close(q);

  EXPECT_EQ(result.wait_for(kStillBlocked), std::future_status::timeout);
  q.Close();
  ASSERT_EQ(result.wait_for(kMustFinish), std::future_status::ready);
  EXPECT_FALSE(result.get());
  EXPECT_EQ(q.Pop(), 1);  // what was queued before Close is still delivered
  EXPECT_EQ(q.Pop(), std::nullopt);
}

TEST(BoundedQueueTest, StopTokenWakesABlockedPop) {
  BoundedQueue<int> q(1);
  std::promise<std::optional<int>> popped;
  std::future<std::optional<int>> result = popped.get_future();
  std::jthread consumer([&](std::stop_token stop) { popped.set_value(q.Pop(stop)); });
  CloseOnExit close(q);

  EXPECT_EQ(result.wait_for(kStillBlocked), std::future_status::timeout);
  consumer.request_stop();
  ASSERT_EQ(result.wait_for(kMustFinish), std::future_status::ready);
  EXPECT_EQ(result.get(), std::nullopt);
  // Stopping one caller does not close the queue for others.
  EXPECT_TRUE(q.Push(5));
  EXPECT_EQ(q.Pop(), 5);
}

TEST(BoundedQueueTest, StopTokenWakesABlockedPushAndDropsItsItem) {
  BoundedQueue<int> q(1);
  ASSERT_TRUE(q.Push(1));
  std::promise<bool> pushed;
  std::future<bool> result = pushed.get_future();
  std::jthread producer([&](std::stop_token stop) { pushed.set_value(q.Push(2, stop)); });
  CloseOnExit close(q);

  EXPECT_EQ(result.wait_for(kStillBlocked), std::future_status::timeout);
  producer.request_stop();
  ASSERT_EQ(result.wait_for(kMustFinish), std::future_status::ready);
  EXPECT_FALSE(result.get());
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.Pop(), 1);
  // The queue is still open: the next push goes through.
  EXPECT_TRUE(q.Push(3));
  EXPECT_EQ(q.Pop(), 3);
}

TEST(BoundedQueueTest, AlreadyStoppedTokenNeverBlocks) {
  std::stop_source stopped;
  stopped.request_stop();
  BoundedQueue<int> empty(1);
  EXPECT_EQ(empty.Pop(stopped.get_token()), std::nullopt);
  BoundedQueue<int> full(1);
  ASSERT_TRUE(full.Push(1));
  EXPECT_FALSE(full.Push(2, stopped.get_token()));
  EXPECT_EQ(full.size(), 1u);
}

// Several producers and consumers through a small queue: every item arrives exactly once, and
// each consumer sees any one producer's items in the order they were pushed (FIFO).
TEST(BoundedQueueTest, ManyProducersAndConsumers) {
  constexpr int kProducers = 4;
  constexpr int kConsumers = 3;
  constexpr int kPerProducer = 2000;
  constexpr size_t kCapacity = 4;
  BoundedQueue<int> q(kCapacity);
  std::vector<std::vector<int>> received(kConsumers);
  std::atomic<bool> over_capacity{false};
  {
    std::vector<std::jthread> consumers;
    for (int c = 0; c < kConsumers; ++c) {
      consumers.emplace_back([&, c] {
        while (std::optional<int> item = q.Pop()) {
          received[c].push_back(*item);
          if (q.size() > kCapacity) over_capacity = true;
        }
      });
    }
    {
      std::vector<std::jthread> producers;
      for (int p = 0; p < kProducers; ++p) {
        producers.emplace_back([&, p] {
          for (int i = 0; i < kPerProducer; ++i) ASSERT_TRUE(q.Push(p * kPerProducer + i));
        });
      }
    }  // producers joined
    q.Close();
  }  // consumers drained the rest and joined

  EXPECT_FALSE(over_capacity);
  std::vector<int> all;
  for (const std::vector<int>& items : received) {
    std::vector<int> last(kProducers, -1);
    for (int item : items) {
      const int producer = item / kPerProducer;
      EXPECT_LT(last[producer], item) << "out of order from producer " << producer;
      last[producer] = item;
    }
    all.insert(all.end(), items.begin(), items.end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kProducers * kPerProducer));
  for (int i = 0; i < kProducers * kPerProducer; ++i) ASSERT_EQ(all[i], i);
}

}  // namespace
}  // namespace ferry
