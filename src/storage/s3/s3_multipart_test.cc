#include "storage/s3/s3_multipart.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

#include "base/mutex.h"
#include "storage/http/recording_transport.h"

namespace ferry::internal_s3 {
namespace {

using namespace std::chrono_literals;

RetryPolicy FastRetry(int attempts = 4) {
  RetryPolicy p;
  p.max_attempts = attempts;
  p.initial_backoff = 1ms;
  p.max_backoff = 2ms;
  return p;
}

int PartNumberOf(std::string_view url) {
  const size_t at = url.find("partNumber=");
  return at == std::string_view::npos ? 0 : std::atoi(std::string(url.substr(at + 11)).c_str());
}

// Completes requests later, on a thread of its own (as the curl transport does), so that many
// are in flight at once; records the most that ever were.
class AsyncTransport : public http::Transport {
 public:
  using Handler = std::function<Result<http::Response>(const http::Request&)>;
  explicit AsyncTransport(Handler handler)
      : handler_(std::move(handler)), thread_([this](std::stop_token stop) { Loop(stop); }) {}
  ~AsyncTransport() override {
    thread_.request_stop();
    cv_.notify_all();
  }

  void Submit(http::Request request, http::BodySink, http::Completion done) override EXCLUDES(mu_) {
    MutexLock lock(mu_);
    queue_.emplace_back(std::move(request), std::move(done));
    ++submitted_;
    max_in_flight_ = std::max<int>(max_in_flight_, static_cast<int>(queue_.size()));
    cv_.notify_all();
  }

  int max_in_flight() const { return max_in_flight_; }
  int submitted() const { return submitted_; }

 private:
  void Loop(std::stop_token stop) EXCLUDES(mu_) {
    while (!stop.stop_requested()) {
      std::deque<std::pair<http::Request, http::Completion>> batch;
      {
        MutexLock lock(mu_);
        cv_.wait(lock, stop, [&]() REQUIRES(mu_) { return !queue_.empty(); });
        if (queue_.empty()) return;
      }
      std::this_thread::sleep_for(20ms);  // let the caller fill its window
      {
        MutexLock lock(mu_);
        batch.swap(queue_);
      }
      for (auto& [request, done] : batch) done(handler_(request));
    }
  }

  Handler handler_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<std::pair<http::Request, http::Completion>> queue_ GUARDED_BY(mu_);
  std::atomic<int> max_in_flight_{0};
  std::atomic<int> submitted_{0};
  std::jthread thread_;  // last: uses everything above
};

PartUploadOptions Options(uint64_t size, uint64_t part_size, int in_flight) {
  PartUploadOptions o;
  o.object_size = size;
  o.plan = PlanParts(size, part_size);
  o.max_in_flight = in_flight;
  o.retry = FastRetry();
  o.url = "s3://b/k";
  o.build = [](int number, uint64_t offset, uint64_t length) -> Result<http::Request> {
    http::Request r;
    r.method = "PUT";
    r.url = "http://h/b/k?partNumber=" + std::to_string(number) + "&uploadId=U";
    r.headers.Set("X-Range", std::to_string(offset) + "+" + std::to_string(length));
    return r;
  };
  o.map_error = [](const http::Response& r) {
    return Status(r.status >= 500 ? StatusCode::kUnavailable : StatusCode::kPermissionDenied,
                  "HTTP " + std::to_string(r.status));
  };
  return o;
}

http::Response Ok(std::string etag) {
  http::Response r;
  r.status = 200;
  r.headers.Set("ETag", std::move(etag));
  return r;
}

TEST(PlanPartsTest, SizesAndCounts) {
  EXPECT_EQ(PlanParts(11, 4).count, 3);
  EXPECT_EQ(PlanParts(12, 4).count, 3);
  EXPECT_EQ(PlanParts(0, 4).count, 1);
  const PartPlan p = PlanParts(uint64_t{1} << 40, uint64_t{16} << 20);  // 1 TiB
  EXPECT_LE(p.count, kMaxParts);
  EXPECT_EQ(p.part_size % (1 << 20), 0u);
  EXPECT_GE(p.part_size * static_cast<uint64_t>(p.count), uint64_t{1} << 40);
}

TEST(UploadPartsTest, KeepsTheWindowFullAndReturnsPartsInOrder) {
  AsyncTransport transport([](const http::Request& r) -> Result<http::Response> {
    return Ok("\"etag-" + std::to_string(PartNumberOf(r.url)) + "\"");
  });
  auto parts = UploadParts(transport, Options(70, 10, 3));
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 7u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ((*parts)[i].number, i + 1);
    EXPECT_EQ((*parts)[i].etag, "\"etag-" + std::to_string(i + 1) + "\"");
  }
  EXPECT_EQ(transport.max_in_flight(), 3);
  EXPECT_EQ(transport.submitted(), 7);
}

TEST(UploadPartsTest, PartsCoverTheObjectExactly) {
  Mutex mu;
  std::vector<std::string> ranges(4);
  http::RecordingTransport transport([&](const http::RecordedRequest& r) -> Result<http::Response> {
    MutexLock lock(mu);
    ranges[PartNumberOf(r.url) - 1] = std::string(r.headers.Get("X-Range").value_or(""));
    return Ok("\"e\"");
  });
  ASSERT_TRUE(UploadParts(transport, Options(11, 3, 2)).ok());
  EXPECT_EQ(ranges, (std::vector<std::string>{"0+3", "3+3", "6+3", "9+2"}));
}

TEST(UploadPartsTest, RetriesATransientFailureOfOnePart) {
  std::atomic<int> part2_attempts{0};
  AsyncTransport transport([&](const http::Request& r) -> Result<http::Response> {
    if (PartNumberOf(r.url) == 2 && part2_attempts++ < 2) {
      if (part2_attempts == 1) return UnavailableError("connection reset");
      http::Response busy;
      busy.status = 503;
      return busy;
    }
    return Ok("\"ok\"");
  });
  auto parts = UploadParts(transport, Options(40, 10, 4));
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ(parts->size(), 4u);
  EXPECT_EQ(part2_attempts.load(), 3);
  EXPECT_EQ(transport.submitted(), 6);
}

TEST(UploadPartsTest, APermanentFailureStopsNewParts) {
  http::RecordingTransport transport([](const http::RecordedRequest& r) -> Result<http::Response> {
    if (PartNumberOf(r.url) == 2) {
      http::Response denied;
      denied.status = 403;
      return denied;
    }
    return Ok("\"ok\"");
  });
  auto parts = UploadParts(transport, Options(50, 10, 1));
  ASSERT_FALSE(parts.ok());
  EXPECT_EQ(parts.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(parts.status().message().find("part 2 of 5"), std::string::npos)
      << parts.status().message();
  EXPECT_EQ(transport.requests().size(), 2u);  // parts 3-5 never started
}

TEST(UploadPartsTest, GivesUpAfterTheAttemptsOfThePolicy) {
  std::atomic<int> calls{0};
  AsyncTransport transport([&](const http::Request&) -> Result<http::Response> {
    ++calls;
    return UnavailableError("down");
  });
  PartUploadOptions o = Options(10, 10, 2);
  o.retry = FastRetry(3);
  auto parts = UploadParts(transport, o);
  ASSERT_FALSE(parts.ok());
  EXPECT_EQ(parts.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(parts.status().message().find("gave up after 3 attempts"), std::string::npos)
      << parts.status().message();
  EXPECT_EQ(calls.load(), 3);
}

TEST(UploadPartsTest, AReplyWithoutETagIsDataLoss) {
  http::RecordingTransport transport;  // 200, no headers
  auto parts = UploadParts(transport, Options(10, 10, 2));
  EXPECT_EQ(parts.status().code(), StatusCode::kDataLoss);
}

TEST(UploadPartsTest, BuildErrorsStopTheUpload) {
  http::RecordingTransport transport([](const http::RecordedRequest&) { return Ok("\"e\""); });
  PartUploadOptions o = Options(30, 10, 1);
  o.build = [](int number, uint64_t, uint64_t) -> Result<http::Request> {
    if (number == 2) return DataLossError("source shrank");
    http::Request r;
    r.url = "http://h/b/k";
    return r;
  };
  auto parts = UploadParts(transport, o);
  EXPECT_EQ(parts.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(transport.requests().size(), 1u);
}

}  // namespace
}  // namespace ferry::internal_s3
