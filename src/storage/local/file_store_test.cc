// The local store: the conformance suite on a temporary folder, plus what is local-only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "base/temp_dir_testutil.h"
#include "ferry/storage/registry.h"
#include "storage/testing/store_conformance.h"

namespace ferry::testing {
namespace {

using ::testing::HasSubstr;

StoreUnderTest LocalStore() {
  static TempDir* root = new TempDir();  // lives for the whole test binary
  return StoreUnderTest{
      .name = "local",
      .open = []() -> Result<StoreAndKey> {
        static int run = 0;
        return OpenUrl((root->path() / ("run" + std::to_string(run++))).string() + "/");
      },
      .multipart_bytes = 3 << 20,
      .many_keys = 1100,
  };
}

INSTANTIATE_TEST_SUITE_P(Local, StoreConformanceTest, ::testing::Values(LocalStore()),
                         StoreUnderTestName);

TEST(FileStore, PlainPathsAndFileUrlsMeanTheSameObject) {
  TempDir tmp;
  auto a = OpenUrl((tmp / "x.txt").string());
  auto b = OpenUrl("file://" + (tmp / "x.txt").string());
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->key, b->key);
  EXPECT_EQ(a->store->ToUrl(a->key), "file://" + (tmp / "x.txt").string());
  EXPECT_EQ(a->store->LocalPath(a->key).value(), tmp / "x.txt");
}

TEST(FileStore, RelativePathsBecomeAbsolute) {
  auto opened = OpenUrl("some/relative/path");
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ("/" + opened->key,
            (std::filesystem::current_path() / "some/relative/path").lexically_normal().string());
}

TEST(FileStore, RefusesKeysThatClimbOutOfTheirFolder) {
  auto opened = OpenUrl("/tmp");
  ASSERT_TRUE(opened.has_value());
  for (const char* key : {"tmp/../etc/passwd", "tmp/./x", "tmp//x"}) {
    auto r = opened->store->Get(key);
    ASSERT_FALSE(r.has_value()) << key;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << key;
  }
}

TEST(FileStore, FileUrlsNeedAnAbsolutePath) {
  auto r = OpenUrl("file://relative/x");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("absolute"));
}

TEST(Registry, UnknownSchemesListTheKnownOnes) {
  auto r = OpenUrl("nope://bucket/key");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("'nope'"));
  EXPECT_THAT(r.error().message(), HasSubstr("file"));
  EXPECT_EQ(UrlScheme("S3://b/k"), "s3");
  EXPECT_EQ(UrlScheme("/a/b"), "file");
  EXPECT_EQ(UrlScheme("a/b://c"), "file");
}

}  // namespace
}  // namespace ferry::testing
