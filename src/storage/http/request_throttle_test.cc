#include "storage/http/request_throttle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "base/temp_dir_testutil.h"
#include "ferry/metrics/metrics.h"
#include "storage/http/http_date.h"
#include "storage/http/recording_transport.h"

namespace ferry::http {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

Headers ThrottleHeaders(std::initializer_list<std::pair<const char*, std::string>> fields) {
  Headers headers;
  for (const auto& [name, value] : fields) headers.Add(name, value);
  return headers;
}

TEST(RetryAfter, SecondsMillisecondsAndDates) {
  const auto now = std::chrono::system_clock::now();
  EXPECT_EQ(RetryAfter(ThrottleHeaders({{"Retry-After", "2"}}), now), milliseconds(2000));
  EXPECT_EQ(
      RetryAfter(ThrottleHeaders({{"x-ms-retry-after-ms", "1500"}, {"Retry-After", "9"}}), now),
      milliseconds(1500));
  const auto date = RetryAfter(
      ThrottleHeaders({{"Retry-After", FormatHttpDate(now + std::chrono::seconds(4))}}), now);
  ASSERT_TRUE(date.has_value());
  EXPECT_GE(*date, milliseconds(3000));
  EXPECT_LE(*date, milliseconds(4000));
  EXPECT_EQ(
      RetryAfter(ThrottleHeaders({{"Retry-After", FormatHttpDate(now - std::chrono::seconds(9))}}),
                 now),
      milliseconds(0));
  EXPECT_EQ(RetryAfter(ThrottleHeaders({{"Retry-After", "86400"}}), now), kMaxRetryAfter);
  EXPECT_EQ(RetryAfter(ThrottleHeaders({{"x-ms-retry-after-ms", "18446744073709551615"}}), now),
            kMaxRetryAfter);
  EXPECT_FALSE(RetryAfter(ThrottleHeaders({{"Retry-After", "soon"}}), now).has_value());
  EXPECT_FALSE(RetryAfter(ThrottleHeaders({}), now).has_value());
}

TEST(IsThrottleResponse, SlowDownBusyTooManyAndAzuresTimeouts) {
  EXPECT_TRUE(IsThrottleResponse(503, {}));
  EXPECT_TRUE(IsThrottleResponse(429, {}));
  EXPECT_TRUE(IsThrottleResponse(500, ThrottleHeaders({{"x-ms-error-code", "OperationTimedOut"}})));
  EXPECT_FALSE(IsThrottleResponse(500, ThrottleHeaders({{"x-ms-error-code", "InternalError"}})));
  EXPECT_FALSE(IsThrottleResponse(500, {}));
  EXPECT_FALSE(IsThrottleResponse(404, {}));
  EXPECT_FALSE(IsThrottleResponse(200, {}));
}

TEST(ThrottleTarget, HostAndFirstPathSegment) {
  EXPECT_EQ(ThrottleTarget("http://127.0.0.1:9000/bucket/a/b.mds?x-id=GetObject"),
            "127.0.0.1:9000/bucket");
  EXPECT_EQ(ThrottleTarget("https://bkt.s3.us-east-1.amazonaws.com/train/shard.0.mds"),
            "bkt.s3.us-east-1.amazonaws.com/train");
  EXPECT_EQ(ThrottleTarget("https://acct.blob.core.windows.net/container/k?sig=secret"),
            "acct.blob.core.windows.net/container");
  EXPECT_EQ(ThrottleTarget("https://host"), "host");
  // A key at a virtual-hosted bucket's root: the bucket, not one gate per object.
  EXPECT_EQ(ThrottleTarget("https://bkt.s3.amazonaws.com/shard.00001.mds"), "bkt.s3.amazonaws.com");
}

// Holds `n` permits of `gate` until destroyed.
std::vector<RequestThrottle::Permit> Take(RequestThrottle& gate, int n) {
  std::vector<RequestThrottle::Permit> out;
  for (int i = 0; i < n; ++i) out.push_back(std::move(gate.Enter().value()));
  return out;
}

// Whether Enter would have to wait now: asked to give up at its first look, it does.
bool WouldWait(RequestThrottle& gate) {
  return !gate.Enter([] { return CancelledError("no wait"); }).has_value();
}

TEST(RequestThrottle, AThrottleHalvesTheRequestsInFlightAndSuccessesGrowItBack) {
  RequestThrottle gate("t", {.decrease_interval = milliseconds(0),
                             .first_pause = milliseconds(0),
                             .max_pause = milliseconds(0)});
  EXPECT_FALSE(gate.limit().has_value());
  {
    auto held = Take(gate, 8);
    EXPECT_FALSE(WouldWait(gate));  // unlimited until throttled
    gate.Throttled(milliseconds(0));
    EXPECT_EQ(gate.limit(), 4.0);
    EXPECT_TRUE(WouldWait(gate));
    held.resize(3);
    EXPECT_FALSE(WouldWait(gate));
    gate.Throttled(milliseconds(0));
    EXPECT_EQ(gate.limit(), 2.0);
    gate.Throttled(milliseconds(0));
    gate.Throttled(milliseconds(0));
    EXPECT_EQ(gate.limit(), 1.0);  // never below one
  }
  // Additive: one more per limit's worth of successes; lifted past twice what was in flight.
  for (int i = 0; i < 3; ++i) gate.Succeeded();
  ASSERT_TRUE(gate.limit().has_value());
  EXPECT_GT(*gate.limit(), 2.0);
  for (int i = 0; i < 200 && gate.limit(); ++i) gate.Succeeded();
  EXPECT_FALSE(gate.limit().has_value());
}

TEST(RequestThrottle, OneBurstOfThrottlesCutsOnce) {
  RequestThrottle gate("t", {.decrease_interval = milliseconds(60'000),
                             .first_pause = milliseconds(0),
                             .max_pause = milliseconds(0)});
  auto held = Take(gate, 16);
  for (int i = 0; i < 10; ++i) gate.Throttled(milliseconds(0));
  EXPECT_EQ(gate.limit(), 8.0);
}

TEST(RequestThrottle, NewRequestsWaitOutTheRetryAfter) {
  RequestThrottle gate("t");
  const uint64_t waited = metrics::GetCounter("/ferry/storage/throttle_wait_ns").value();
  EXPECT_GE(gate.Throttled(milliseconds(300)), milliseconds(299));
  const auto start = Clock::now();
  ASSERT_TRUE(gate.Enter().has_value());
  EXPECT_GE(Clock::now() - start, milliseconds(250));
  EXPECT_GE(metrics::GetCounter("/ferry/storage/throttle_wait_ns").value() - waited, 250'000'000u);
  // A caller that gives up while waiting gets its own error back.
  gate.Throttled(milliseconds(5'000));
  int asked = 0;
  auto stopped = gate.Enter([&] { return ++asked < 3 ? Status::Ok() : CancelledError("gone"); });
  EXPECT_EQ(stopped.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(asked, 3);
}

TEST(RequestThrottle, WithoutRetryAfterThePauseDoublesAndASuccessResetsIt) {
  RequestThrottle gate("t", {.decrease_interval = milliseconds(0),
                             .first_pause = milliseconds(100),
                             .max_pause = milliseconds(1'000)});
  std::vector<milliseconds> pauses;
  for (int i = 0; i < 6; ++i) pauses.push_back(gate.Throttled(std::nullopt));
  // Jittered in [half, whole] of 100, 200, 400, 800, 1000, 1000 - and never shorter than what
  // was already held.
  EXPECT_GE(pauses[0], milliseconds(45));
  EXPECT_LE(pauses[0], milliseconds(100));
  EXPECT_GE(pauses[3], milliseconds(395));
  EXPECT_LE(pauses[5], milliseconds(1'000));
  gate.Succeeded();
  std::this_thread::sleep_for(milliseconds(1'050));
  EXPECT_LE(gate.Throttled(std::nullopt), milliseconds(100));
  // A Retry-After of 0 still waits the backoff: no request is asked again at once.
  gate.Succeeded();
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_GE(gate.Throttled(milliseconds(0)), milliseconds(45));
}

// Two gates on one entry of one table: two processes on a node throttled by the same target.
TEST(RequestThrottle, AThrottleOneProcessSeesHoldsEveryProcessOnTheNode) {
  testing::TempDir tmp;
  auto first_table = OpenNodeThrottleTable(tmp / "table");
  auto second_table = OpenNodeThrottleTable(tmp / "table");  // mapped again, as another process
  ASSERT_TRUE(first_table && second_table);
  const int slot = NodeThrottleSlot(*first_table, "127.0.0.1:1/bucket");
  ASSERT_GE(slot, 0);
  EXPECT_EQ(NodeThrottleSlot(*second_table, "127.0.0.1:1/bucket"), slot);
  EXPECT_NE(NodeThrottleSlot(*second_table, "127.0.0.1:1/other"), slot);
  RequestThrottle one("127.0.0.1:1/bucket", {.decrease_interval = milliseconds(0)}, first_table);
  RequestThrottle two("127.0.0.1:1/bucket", {.decrease_interval = milliseconds(0)}, second_table);
  auto held = Take(two, 6);
  one.Throttled(milliseconds(400));
  EXPECT_TRUE(WouldWait(two));  // paused, and cut
  EXPECT_EQ(two.limit(), 3.0);
  const auto start = Clock::now();
  held.resize(2);
  ASSERT_TRUE(two.Enter().has_value());
  EXPECT_GE(Clock::now() - start, milliseconds(200));  // of the 400, WouldWait took one slice

  // No table to be had: none (each process throttles alone).
  EXPECT_EQ(OpenNodeThrottleTable(tmp / "no" / "such" / "folder"), nullptr);
}

TEST(ExecuteThroughGate, AThrottleReplyIsWaitedOutAndAskedAgain) {
  int calls = 0;
  RecordingTransport transport([&](const RecordedRequest&) -> Result<Response> {
    Response response;
    response.status = ++calls <= 2 ? 503 : 200;
    if (response.status == 503) response.headers.Set("Retry-After", "0");
    return response;
  });
  const uint64_t throttled = metrics::GetCounter("/ferry/storage/throttled").value();
  int built = 0;
  auto result = ExecuteThroughGate(
      transport,
      [&]() -> Result<Request> {
        ++built;
        Request request;
        request.url = "http://127.0.0.1:9/gate-test/key";
        return request;
      },
      {}, Clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(result.has_value()) << result.status().ToString();
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(built, 3);  // built afresh each time: a signature carries the time
  EXPECT_EQ(metrics::GetCounter("/ferry/storage/throttled").value() - throttled, 2u);

  // Past the deadline the throttle reply is the answer.
  calls = 0;
  result = ExecuteThroughGate(
      transport,
      [&]() -> Result<Request> {
        Request request;
        request.url = "http://127.0.0.1:9/gate-test-2/key";
        return request;
      },
      {}, Clock::now());
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->status, 503);
}

}  // namespace
}  // namespace ferry::http
