// The libcurl transport against a real socket whose connection stalls: a sink told to stop
// must end the transfer without waiting for the stall timeout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "storage/http/transport.h"
#include "storage/testing/stalling_server_testutil.h"

namespace ferry::http {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::StallingServer;
using Clock = std::chrono::steady_clock;

struct Outcome {
  Result<Response> result = Status();
  uint64_t bytes = 0;
  double seconds_after_stop = 0;
};

// A GET from `server` whose sink counts the bytes and, from `delay` on, says stop.
// `low_speed_bytes` 0: no stall limit, so libcurl keeps no timer of its own for the transfer.
Outcome GetThenStop(const StallingServer& server, milliseconds delay,
                    uint32_t low_speed_bytes = Timeouts{}.low_speed_bytes) {
  Request request;
  request.url = server.Url("object");
  request.timeouts.low_speed_seconds = 60;  // the stall timeout must not be what ends it
  request.timeouts.low_speed_bytes = low_speed_bytes;
  std::atomic<bool> stop{false};
  Clock::time_point stopped_at;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(delay);
    stopped_at = Clock::now();
    stop = true;
  });
  Outcome outcome;
  outcome.result = DefaultTransport()->Execute(request, [&](std::string_view chunk) -> Status {
    outcome.bytes += chunk.size();
    return stop ? CancelledError("told to stop") : Status::Ok();
  });
  stopper.join();
  outcome.seconds_after_stop = std::chrono::duration<double>(Clock::now() - stopped_at).count();
  return outcome;
}

TEST(CurlTransportTest, ASinkToldToStopEndsAStalledTransfer) {
  for (const auto stall :
       {StallingServer::Stall::kMidBody, StallingServer::Stall::kBeforeHeaders}) {
    const bool mid_body = stall == StallingServer::Stall::kMidBody;
    SCOPED_TRACE(mid_body ? "mid-body" : "before the headers");
    const StallingServer server(stall);
    const Outcome outcome = GetThenStop(server, milliseconds(300));
    ASSERT_FALSE(outcome.result.has_value());
    EXPECT_EQ(outcome.result.error().code(), StatusCode::kCancelled)
        << outcome.result.error().ToString();
    EXPECT_THAT(outcome.result.error().message(), HasSubstr("told to stop"));
    EXPECT_EQ(outcome.bytes, mid_body ? StallingServer::kBytesBeforeStall : 0u);
    // libcurl wakes a stalled transfer about once a second; the stall timeout is a minute.
    EXPECT_LT(outcome.seconds_after_stop, 10);
    EXPECT_EQ(server.requests(), 1);
  }
}

// Without a stall limit libcurl sets no timer for a quiet transfer; the loop's sweep still
// runs it about once a second, so the sink hears the stop.
TEST(CurlTransportTest, ASinkToldToStopEndsAStalledTransferWithoutAStallLimit) {
  const StallingServer server(StallingServer::Stall::kMidBody);
  const Outcome outcome = GetThenStop(server, milliseconds(300), /*low_speed_bytes=*/0);
  ASSERT_FALSE(outcome.result.has_value());
  EXPECT_EQ(outcome.result.error().code(), StatusCode::kCancelled)
      << outcome.result.error().ToString();
  EXPECT_EQ(outcome.bytes, StallingServer::kBytesBeforeStall);
  // Within the sweep's second or two; without it, libcurl's connect timeout (10 s from the
  // start) was what woke the transfer.
  EXPECT_LT(outcome.seconds_after_stop, 5);
}

// The sink's first error is the transfer's result, whatever the sink says when libcurl asks it
// once more as the transfer ends.
TEST(CurlTransportTest, TheSinksFirstErrorStands) {
  const StallingServer server(StallingServer::Stall::kMidBody);
  Request request;
  request.url = server.Url("object");
  bool failed = false;
  const auto result = DefaultTransport()->Execute(request, [&](std::string_view chunk) -> Status {
    if (failed) return CancelledError("asked again after failing");
    if (chunk.empty()) return Status::Ok();
    failed = true;
    return DataLossError("the first bytes are wrong");
  });
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), StatusCode::kDataLoss) << result.error().ToString();
}

}  // namespace
}  // namespace ferry::http
