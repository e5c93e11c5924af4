#include "storage/s3/s3_endpoint.h"

#include <gtest/gtest.h>

#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_s3 {
namespace {

TEST(SplitUrlTest, Parts) {
  auto p = SplitUrl("https://Host.Example.com:443/a/b%20c?x=1&y#frag");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->scheme, "https");
  EXPECT_EQ(p->authority, "Host.Example.com:443");
  EXPECT_EQ(p->path, "/a/b%20c");
  EXPECT_EQ(p->query, "x=1&y");
  EXPECT_EQ(HostHeader(*p), "host.example.com");

  p = SplitUrl("http://127.0.0.1:5055?list-type=2");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->path, "");
  EXPECT_EQ(p->query, "list-type=2");
  EXPECT_EQ(HostHeader(*p), "127.0.0.1:5055");
  EXPECT_EQ(HostHeader(*SplitUrl("http://h:80/")), "h");

  EXPECT_FALSE(SplitUrl("no-scheme/path").ok());
  EXPECT_FALSE(SplitUrl("http:///path").ok());
}

TEST(ParseBucketUrlTest, BucketAndLiteralKey) {
  auto b = ParseBucketUrl("s3://my-bucket/a/b c/d+e%20f#g?h", "s3");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->bucket, "my-bucket");
  EXPECT_EQ(b->key, "a/b c/d+e%20f#g?h");  // taken literally, as the AWS CLI does

  b = ParseBucketUrl("S3://bucket", "s3");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->bucket, "bucket");
  EXPECT_EQ(b->key, "");
  EXPECT_EQ(ParseBucketUrl("s3://bucket/", "s3")->key, "");
  EXPECT_EQ(ParseBucketUrl("gs://b_1/x", "gs")->bucket, "b_1");

  EXPECT_EQ(ParseBucketUrl("s3:///key", "s3").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBucketUrl("gs://bucket/key", "s3").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBucketUrl("s3://bu cket/key", "s3").status().code(), StatusCode::kInvalidArgument);
}

TEST(ValidateBucketNameTest, AwsRules) {
  for (const char* ok : {"abc", "my-bucket", "my.bucket.1", "0bucket9",
                         "a23456789012345678901234567890123456789012345678901234567890123"}) {
    EXPECT_TRUE(ValidateBucketName(ok, BucketNaming::kAws).ok()) << ok;
  }
  for (const char* bad :
       {"ab", "My-Bucket", "my_bucket", "-bucket", "bucket-", "my..bucket", "192.168.5.4",
        "a234567890123456789012345678901234567890123456789012345678901234"}) {
    Status s = ValidateBucketName(bad, BucketNaming::kAws);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  }
  EXPECT_TRUE(ValidateBucketName("my_bucket", BucketNaming::kGcs).ok());
  EXPECT_FALSE(ValidateBucketName("My_bucket", BucketNaming::kGcs).ok());
  EXPECT_TRUE(ValidateBucketName("My_Bucket", BucketNaming::kPermissive).ok());
  EXPECT_FALSE(ValidateBucketName("a/b", BucketNaming::kPermissive).ok());
}

class EndpointTest : public ::testing::Test {
 protected:
  testing::FakeEnv env_;
};

TEST_F(EndpointTest, AwsIsVirtualHostedUnlessTheBucketHasDots) {
  auto e = ResolveS3Endpoint("my-bucket", "eu-west-1", env_);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->custom);
  EXPECT_EQ(e->style, AddressingStyle::kVirtualHosted);
  EXPECT_EQ(ObjectUrl(*e, "my-bucket", "a/b.txt"),
            "https://my-bucket.s3.eu-west-1.amazonaws.com/a/b.txt");
  EXPECT_EQ(BucketUrl(*e, "my-bucket"), "https://my-bucket.s3.eu-west-1.amazonaws.com");

  e = ResolveS3Endpoint("my.dotted.bucket", "eu-west-1", env_);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->style, AddressingStyle::kPath);
  EXPECT_EQ(ObjectUrl(*e, "my.dotted.bucket", "k"),
            "https://s3.eu-west-1.amazonaws.com/my.dotted.bucket/k");
}

TEST_F(EndpointTest, CustomEndpointsArePathStyleInPriorityOrder) {
  env_.Set("S3_ENDPOINT_URL", "http://third:3");
  EXPECT_EQ(ResolveS3Endpoint("b", "us-east-1", env_)->authority, "third:3");
  env_.Set("AWS_ENDPOINT_URL", "http://second:2");
  EXPECT_EQ(ResolveS3Endpoint("b", "us-east-1", env_)->authority, "second:2");
  env_.Set("AWS_ENDPOINT_URL_S3", "HTTP://First:1/");
  auto e = ResolveS3Endpoint("b", "us-east-1", env_);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->scheme, "http");
  EXPECT_EQ(e->authority, "first:1");
  EXPECT_TRUE(e->custom);
  EXPECT_EQ(e->style, AddressingStyle::kPath);
  EXPECT_EQ(ObjectUrl(*e, "b", "k"), "http://first:1/b/k");
  EXPECT_EQ(e->ToString(), "http://first:1 (path style)");

  env_.Set("AWS_ENDPOINT_URL_S3", "ftp://x");
  EXPECT_EQ(ResolveS3Endpoint("b", "r", env_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ResolveS3Endpoint("b", "r", env_).status().message().find("AWS_ENDPOINT_URL_S3"),
            std::string::npos);
}

TEST_F(EndpointTest, AddressingOverride) {
  env_.Set("AWS_ENDPOINT_URL", "https://minio.internal:9000/s3");
  env_.Set("FERRY_S3_ADDRESSING", "virtual");
  auto e = ResolveS3Endpoint("data", "us-east-1", env_);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(ObjectUrl(*e, "data", "x/y"), "https://data.minio.internal:9000/s3/x/y");
  env_.Unset("AWS_ENDPOINT_URL");
  env_.Set("FERRY_S3_ADDRESSING", "path");
  EXPECT_EQ(ObjectUrl(*ResolveS3Endpoint("data", "us-west-2", env_), "data", "k"),
            "https://s3.us-west-2.amazonaws.com/data/k");
  env_.Set("FERRY_S3_ADDRESSING", "sideways");
  EXPECT_EQ(ResolveS3Endpoint("data", "us-east-1", env_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ObjectUrlTest, KeysAreEncodedPerSegment) {
  auto e = ParseEndpointUrl("http://127.0.0.1:5055");
  ASSERT_TRUE(e.ok());
  struct Case {
    std::string_view key;
    std::string_view url;
  };
  const Case cases[] = {
      {"my folder/my file.txt", "http://127.0.0.1:5055/b/my%20folder/my%20file.txt"},
      {"données/日本語.bin",
       "http://127.0.0.1:5055/b/donn%C3%A9es/%E6%97%A5%E6%9C%AC%E8%AA%9E.bin"},
      {"a+b/c", "http://127.0.0.1:5055/b/a%2Bb/c"},
      {"100%/x", "http://127.0.0.1:5055/b/100%25/x"},
      {"tag#1", "http://127.0.0.1:5055/b/tag%231"},
      {"what?/now", "http://127.0.0.1:5055/b/what%3F/now"},
      {"a//b/", "http://127.0.0.1:5055/b/a//b/"},
      {"~user/=x", "http://127.0.0.1:5055/b/~user/%3Dx"},
  };
  for (const Case& c : cases) EXPECT_EQ(ObjectUrl(*e, "b", c.key), c.url) << c.key;
}

}  // namespace
}  // namespace ferry::internal_s3
