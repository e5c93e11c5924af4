#include "storage/retry_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <thread>

namespace ferry {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

TEST(BackoffForAttempt, GrowsExponentiallyUpToTheCapWithFullJitter) {
  const RetryPolicy p{.max_attempts = 10,
                      .initial_backoff = milliseconds(100),
                      .max_backoff = milliseconds(1000),
                      .total_budget = milliseconds(10000)};
  // The draw scales the ceiling: 0 -> no wait, just below 1 -> just below the ceiling.
  EXPECT_EQ(BackoffForAttempt(p, 1, 0.0), milliseconds(0));
  EXPECT_EQ(BackoffForAttempt(p, 1, 0.999), milliseconds(99));
  EXPECT_EQ(BackoffForAttempt(p, 2, 0.999), milliseconds(199));
  EXPECT_EQ(BackoffForAttempt(p, 3, 0.5), milliseconds(200));
  EXPECT_EQ(BackoffForAttempt(p, 4, 0.999), milliseconds(799));
  EXPECT_EQ(BackoffForAttempt(p, 5, 0.999), milliseconds(999));   // capped at max_backoff
  EXPECT_EQ(BackoffForAttempt(p, 60, 0.999), milliseconds(999));  // no overflow
  EXPECT_EQ(BackoffForAttempt(p, 0, 0.5), milliseconds(50));      // treated as the first
  EXPECT_EQ(BackoffForAttempt(p, 2, 7.0), milliseconds(200));     // the draw is clamped
}

TEST(UnitRandom, StaysInTheUnitInterval) {
  for (int i = 0; i < 10000; ++i) {
    const double r = UnitRandom();
    ASSERT_GE(r, 0.0);
    ASSERT_LT(r, 1.0);
  }
}

const RetryPolicy kFast{.max_attempts = 4,
                        .initial_backoff = milliseconds(1),
                        .max_backoff = milliseconds(2),
                        .total_budget = milliseconds(5000)};

TEST(Retry, RetriesTransientErrorsUntilSuccess) {
  int calls = 0;
  Result<int> r = Retry(kFast, [&]() -> Result<int> {
    if (++calls < 3) return UnavailableError("flaky");
    return 42;
  });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(calls, 3);
}

TEST(Retry, DoesNotRetryPermanentErrors) {
  int calls = 0;
  Status s = Retry(kFast, [&] {
    ++calls;
    return NotFoundError("gone");
  });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(calls, 1);
}

TEST(Retry, GivesUpAfterMaxAttemptsAndSaysSo) {
  int calls = 0;
  Status s = Retry(kFast, [&] {
    ++calls;
    return DeadlineExceededError("slow");
  });
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("gave up after 4 attempts"));
  EXPECT_THAT(s.message(), HasSubstr("slow"));
}

TEST(Retry, AGiveUpScopeEndsTheRetriesOnItsThreadOnly) {
  int calls = 0;
  std::vector<int> asked;
  {
    RetryGiveUpScope scope([&](int attempts, const Status& failure) {
      asked.push_back(attempts);
      EXPECT_EQ(failure.code(), StatusCode::kUnavailable);
      return attempts >= 2;
    });
    Status s = Retry(kFast, [&] {
      ++calls;
      return UnavailableError("refused");
    });
    EXPECT_EQ(calls, 2);
    EXPECT_THAT(s.message(), HasSubstr("gave up after 2 attempts"));
    // Another thread is not in the scope.
    int elsewhere = 0;
    std::thread([&] {
      (void)Retry(kFast, [&] {
        ++elsewhere;
        return UnavailableError("refused");
      });
    }).join();
    EXPECT_EQ(elsewhere, 4);
  }
  EXPECT_EQ(asked, (std::vector<int>{1, 2}));
  calls = 0;
  (void)Retry(kFast, [&] {
    ++calls;
    return UnavailableError("refused");
  });
  EXPECT_EQ(calls, 4);  // the scope is gone
}

TEST(Retry, StopsWhenTheTimeBudgetIsSpent) {
  const RetryPolicy p{.max_attempts = 1000,
                      .initial_backoff = milliseconds(20),
                      .max_backoff = milliseconds(20),
                      .total_budget = milliseconds(60)};
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  Status s = Retry(p, [&] {
    ++calls;
    return UnavailableError("down");
  });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_LT(calls, 1000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(Retry, AStopRequestEndsTheWait) {
  const RetryPolicy p{.max_attempts = 10,
                      .initial_backoff = milliseconds(10'000),
                      .max_backoff = milliseconds(10'000),
                      .total_budget = milliseconds(100'000)};
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  // The first attempt fails; the wait before the second (up to 10 s) is cut short.
  Status s = Retry(
      p, [] { return UnavailableError("down"); }, stop.get_token());
  if (s.code() != StatusCode::kCancelled) {
    // The random draw may be ~0 s: then the stop is seen after a few fast attempts.
    EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace ferry
