#include "storage/http/http_types.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "storage/testing/fake_env_testutil.h"

namespace ferry::http {
namespace {

TEST(Headers, AreCaseInsensitiveAndSetReplaces) {
  Headers h;
  h.Add("Content-Length", "10");
  h.Add("x-amz-meta-a", "1");
  h.Add("X-AMZ-META-A", "2");
  EXPECT_EQ(h.Get("content-length").value(), "10");
  EXPECT_EQ(h.Get("X-Amz-Meta-A").value(), "1");  // the first one
  h.Set("X-Amz-Meta-A", "3");
  EXPECT_EQ(h.fields().size(), 2u);
  EXPECT_EQ(h.Get("x-amz-meta-a").value(), "3");
  h.Remove("CONTENT-LENGTH");
  EXPECT_FALSE(h.Get("Content-Length").has_value());
}

TEST(RedactUrl, MasksCredentialsInTheQueryOnly) {
  EXPECT_EQ(RedactUrl("https://a.blob.core.windows.net/c/k?sv=2021&sig=SECRET%3D&se=x"),
            "https://a.blob.core.windows.net/c/k?sv=2021&sig=REDACTED&se=x");
  EXPECT_EQ(RedactUrl("https://s3/b/k?X-Amz-Credential=AKIA&X-Amz-Signature=abc&x=1"),
            "https://s3/b/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x=1");
  EXPECT_EQ(RedactUrl("http://h/p?token=t&sig"), "http://h/p?token=REDACTED&sig");
  EXPECT_EQ(RedactUrl("http://h/path/sig=not-a-query"), "http://h/path/sig=not-a-query");
}

TEST(EqualsIgnoreCase, ComparesAscii) {
  EXPECT_TRUE(EqualsIgnoreCase("ETag", "etag"));
  EXPECT_FALSE(EqualsIgnoreCase("ETag", "etags"));
}

TEST(TimeoutsFromEnvironment, TakesTheStallLimitsAndIgnoresWhatIsNotANumber) {
  testing::FakeEnv env;
  EXPECT_EQ(TimeoutsFromEnvironment(env).low_speed_bytes, Timeouts{}.low_speed_bytes);
  EXPECT_EQ(TimeoutsFromEnvironment(env).low_speed_seconds, Timeouts{}.low_speed_seconds);
  env.Set("FERRY_LOW_SPEED_LIMIT", "4096");
  env.Set("FERRY_LOW_SPEED_TIME", "2");
  EXPECT_EQ(TimeoutsFromEnvironment(env).low_speed_bytes, 4096u);
  EXPECT_EQ(TimeoutsFromEnvironment(env).low_speed_seconds, 2u);
  env.Set("FERRY_LOW_SPEED_LIMIT", "4k");  // not a number: the default stays
  env.Set("FERRY_LOW_SPEED_TIME", "0");    // curl would take 0 for "never": refused
  EXPECT_EQ(TimeoutsFromEnvironment(env).low_speed_bytes, Timeouts{}.low_speed_bytes);
  EXPECT_EQ(TimeoutsFromEnvironment(env).low_speed_seconds, Timeouts{}.low_speed_seconds);
  env.Set("FERRY_LOW_SPEED_LIMIT", "4294967296");  // 2^32: more than the field holds
  EXPECT_EQ(TimeoutsFromEnvironment(env).low_speed_bytes, Timeouts{}.low_speed_bytes);
}

TEST(TimeoutsFromEnvironment, ReadsTheProcessEnvironmentByDefault) {
  ::setenv("FERRY_LOW_SPEED_TIME", "7", 1);
  EXPECT_EQ(TimeoutsFromEnvironment().low_speed_seconds, 7u);
  ::unsetenv("FERRY_LOW_SPEED_TIME");
}

}  // namespace
}  // namespace ferry::http

namespace ferry::http {
namespace {

TEST(StallLimitScope, CapsTheStallLimitOfRequestsMadeOnItsThreadOnly) {
  const uint32_t usual = DefaultTimeouts().low_speed_seconds;
  ASSERT_GT(usual, 5u);
  {
    StallLimitScope scope(5);
    EXPECT_EQ(Request().timeouts.low_speed_seconds, 5u);
    Timeouts configured;  // a store's own (S3's config) is capped too
    configured.low_speed_seconds = 60;
    EXPECT_EQ(StallLimitScope::Apply(configured).low_speed_seconds, 5u);
    {
      StallLimitScope looser(20);  // the least limit applies
      EXPECT_EQ(Request().timeouts.low_speed_seconds, 5u);
      StallLimitScope tighter(2);
      EXPECT_EQ(Request().timeouts.low_speed_seconds, 2u);
    }
    EXPECT_EQ(Request().timeouts.low_speed_seconds, 5u);
    uint32_t elsewhere = 0;
    std::thread([&] { elsewhere = Request().timeouts.low_speed_seconds; }).join();
    EXPECT_EQ(elsewhere, usual);
  }
  EXPECT_EQ(Request().timeouts.low_speed_seconds, usual);
}

}  // namespace
}  // namespace ferry::http
