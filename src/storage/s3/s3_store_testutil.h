// What the S3 store's request-building tests share (s3_store_test.cc, s3_store_multipart_test.cc):
// a store on a RecordingTransport with pinned credentials and clock, canned replies, and the
// checks that no error carries a secret or a signature. Test-only.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/http/recording_transport.h"
#include "storage/s3/s3_store.h"
#include "storage/s3/s3_testutil.h"

namespace ferry::internal_s3::s3_test {

using namespace std::chrono_literals;

inline http::Response Reply(int status, std::string body = "",
                            std::vector<std::pair<std::string, std::string>> headers = {}) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  for (auto& [name, value] : headers) r.headers.Add(std::move(name), std::move(value));
  return r;
}

// The signature in `r`'s Authorization header; "" when it has none.
inline std::string Signature(const http::RecordedRequest& r) {
  const std::string_view auth = r.headers.Get("Authorization").value_or("");
  const size_t at = auth.find("Signature=");
  return at == std::string_view::npos ? "" : std::string(auth.substr(at + 10));
}

class S3StoreTest : public ::testing::Test {
 protected:
  S3StoreConfig Config() const {
    S3StoreConfig c;
    c.bucket = "bucket";
    c.endpoint = *ParseEndpointUrl("http://127.0.0.1:9000");
    c.region = "us-east-1";
    c.credentials =
        AwsCredentials{"AKIAIOSFODNN7EXAMPLE", std::string(kSecret), std::string(kToken), "test"};
    c.retry.initial_backoff = 1ms;
    c.retry.max_backoff = 2ms;
    c.retry.max_attempts = 4;
    c.clock = [] { return std::chrono::system_clock::time_point(1709987696s); };
    return c;
  }

  std::shared_ptr<ObjectStore> Make(S3StoreConfig config,
                                    http::RecordingTransport::Handler handler) {
    transport_ = std::make_shared<http::RecordingTransport>(std::move(handler));
    auto store = MakeS3Store(std::move(config), transport_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? *store : nullptr;
  }

  std::shared_ptr<http::RecordingTransport> transport_;
};

// No error message may contain a secret, nor any request's signature.
inline void ExpectNoSecrets(const Status& s, const std::vector<http::RecordedRequest>& requests) {
  EXPECT_EQ(s.message().find(kSecret), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find(kToken), std::string::npos) << s.message();
  for (const auto& r : requests) {
    const std::string sig = Signature(r);
    if (!sig.empty()) {
      EXPECT_EQ(s.message().find(sig), std::string::npos) << s.message();
    }
  }
}

// Small enough that 11 bytes make three parts.
inline S3StoreConfig SmallParts(S3StoreConfig c) {
  c.multipart_threshold = 10;
  c.part_size = 4;
  c.max_parts_in_flight = 2;
  return c;
}

}  // namespace ferry::internal_s3::s3_test
