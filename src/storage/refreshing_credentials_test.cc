// RefreshingCredentials on a clock the test moves: static credentials are fetched once;
// temporary ones are renewed in the background from their refresh point while the old ones keep
// signing; a failing renewal is retried with backoff and only becomes an error, naming the
// source, once the old ones are no longer valid; Expire drops rejected ones; and callers that
// find none wait for one fetch rather than each making their own.
#include "storage/refreshing_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ferry::internal_storage {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using Time = std::chrono::system_clock::time_point;
using ::testing::HasSubstr;

struct TestCredentials {
  std::string key;
  std::optional<Time> expiration;
  friend bool operator==(const TestCredentials&, const TestCredentials&) = default;
};

const Time kStart = Time() + hours(24 * 365 * 50);

class ManualClock {
 public:
  Time now() const { return Time(std::chrono::system_clock::duration(ticks_.load())); }
  void Set(Time t) { ticks_ = t.time_since_epoch().count(); }
  WallClock fn() const {
    return [this] { return now(); };
  }

 private:
  std::atomic<std::chrono::system_clock::rep> ticks_{kStart.time_since_epoch().count()};
};

// A source that issues "key-N" valid for `life` from the clock's time, or fails while told to.
class Source {
 public:
  Source(const ManualClock& clock, std::chrono::system_clock::duration life)
      : clock_(clock), life_(life) {}
  Result<TestCredentials> Fetch() {
    const int n = ++fetches_;
    if (failing_) return UnavailableError("the token endpoint did not answer");
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    return TestCredentials{"key-" + std::to_string(n), clock_.now() + life_};
  }
  std::atomic<int> fetches_{0};
  std::atomic<bool> failing_{false};
  std::chrono::milliseconds delay_{0};

 private:
  const ManualClock& clock_;
  std::chrono::system_clock::duration life_;
};

TEST(CredentialRefreshTime, EightyPercentOrFiveMinutesBeforeButNotBeforeHalfTheirLife) {
  EXPECT_EQ(CredentialRefreshTime(kStart, kStart + hours(1)), kStart + minutes(48));
  EXPECT_EQ(CredentialRefreshTime(kStart, kStart + minutes(15)), kStart + minutes(10));
  EXPECT_EQ(CredentialRefreshTime(kStart, kStart + seconds(20)), kStart + seconds(10));
  EXPECT_EQ(CredentialExpiryMargin(kStart, kStart + hours(1)), seconds(30));
  EXPECT_EQ(CredentialExpiryMargin(kStart, kStart + seconds(20)), seconds(2));
}

TEST(RefreshingCredentials, CredentialsThatNeverExpireAreFetchedOnce) {
  int fetches = 0;
  RefreshingCredentials<TestCredentials> c("static keys", [&]() -> Result<TestCredentials> {
    ++fetches;
    return TestCredentials{"fixed", std::nullopt};
  });
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.Current().value().key, "fixed");
  EXPECT_EQ(fetches, 1);
}

TEST(RefreshingCredentials, RenewsInTheBackgroundWhileTheOldOnesStillSign) {
  ManualClock clock;
  Source source(clock, seconds(20));
  RefreshingCredentials<TestCredentials> c(
      "test role", [&] { return source.Fetch(); }, clock.fn());
  EXPECT_EQ(c.Current().value().key, "key-1");
  clock.Set(kStart + seconds(9));
  EXPECT_EQ(c.Current().value().key, "key-1");
  c.WaitForRefresh();
  EXPECT_EQ(source.fetches_, 1);  // not due yet

  clock.Set(kStart + seconds(11));  // past the refresh point: the old ones, and a renewal
  source.delay_ = std::chrono::milliseconds(50);
  EXPECT_EQ(c.Current().value().key, "key-1");
  EXPECT_EQ(c.Current().value().key, "key-1");  // one renewal at a time, no wait
  c.WaitForRefresh();
  EXPECT_EQ(source.fetches_, 2);
  EXPECT_EQ(c.Current().value().key, "key-2");

  clock.Set(kStart + seconds(22));  // key-2 (issued at 11 s) is due at 21 s
  EXPECT_EQ(c.Current().value().key, "key-2");
  c.WaitForRefresh();
  EXPECT_EQ(c.Current().value().key, "key-3");
}

TEST(RefreshingCredentials, AFailedRenewalIsRetriedWithBackoffThenIsAnErrorNamingTheSource) {
  ManualClock clock;
  Source source(clock, seconds(20));
  RefreshingCredentials<TestCredentials> c(
      "web identity (STS)", [&] { return source.Fetch(); }, clock.fn());
  ASSERT_TRUE(c.Current().ok());
  source.failing_ = true;
  clock.Set(kStart + seconds(10));
  EXPECT_EQ(c.Current().value().key, "key-1");
  c.WaitForRefresh();
  EXPECT_EQ(source.fetches_, 2);
  EXPECT_THAT(c.last_error().message(), HasSubstr("did not answer"));
  EXPECT_EQ(c.Current().value().key, "key-1");  // still valid; the next try waits 1 s
  c.WaitForRefresh();
  EXPECT_EQ(source.fetches_, 2);
  clock.Set(kStart + seconds(11) + std::chrono::milliseconds(1));
  EXPECT_EQ(c.Current().value().key, "key-1");
  c.WaitForRefresh();
  EXPECT_EQ(source.fetches_, 3);

  clock.Set(kStart + seconds(18));  // within the 2 s margin of expiry: no longer used
  auto expired = c.Current();
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().code(), StatusCode::kUnauthenticated);  // not to be retried
  EXPECT_THAT(expired.status().message(), HasSubstr("credentials from web identity (STS)"));
  EXPECT_THAT(expired.status().message(), HasSubstr("did not answer"));

  source.failing_ = false;  // the source is back: the next caller fetches
  EXPECT_EQ(c.Current().value().key, "key-5");
  EXPECT_TRUE(c.last_error().ok());
}

TEST(RefreshingCredentials, ExpireDropsWhatWasRejectedAndOnlyThat) {
  ManualClock clock;
  Source source(clock, hours(1));
  RefreshingCredentials<TestCredentials> c(
      "test role", [&] { return source.Fetch(); }, clock.fn());
  const TestCredentials first = c.Current().value();
  c.Expire(TestCredentials{"some-other-key", first.expiration});
  EXPECT_EQ(c.Current().value(), first);
  c.Expire(first);
  EXPECT_EQ(c.Current().value().key, "key-2");
  EXPECT_EQ(source.fetches_, 2);
}

// Many requests refused at once, each not knowing which credentials it carried: credentials
// fetched in the last seconds are newer than what those requests carried, so they stay - one
// fetch, not one per refused request.
TEST(RefreshingCredentials, RejectKeepsCredentialsFetchedMomentsAgo) {
  ManualClock clock;
  Source source(clock, hours(1));
  RefreshingCredentials<TestCredentials> c(
      "test role", [&] { return source.Fetch(); }, clock.fn());
  const TestCredentials first = c.Current().value();
  for (int i = 0; i < 10; ++i) c.Reject();
  EXPECT_EQ(c.Current().value(), first);
  EXPECT_EQ(source.fetches_, 1);
}

TEST(RefreshingCredentials, CallersWithoutCredentialsShareOneFetch) {
  ManualClock clock;
  Source source(clock, hours(1));
  source.delay_ = std::chrono::milliseconds(100);
  RefreshingCredentials<TestCredentials> c(
      "test role", [&] { return source.Fetch(); }, clock.fn());
  std::vector<std::string> keys(8);
  {
    std::vector<std::jthread> callers;
    for (size_t i = 0; i < keys.size(); ++i) {
      callers.emplace_back([&, i] { keys[i] = c.Current().value().key; });
    }
  }
  EXPECT_EQ(source.fetches_, 1);
  for (const std::string& key : keys) EXPECT_EQ(key, "key-1");
}

}  // namespace
}  // namespace ferry::internal_storage
