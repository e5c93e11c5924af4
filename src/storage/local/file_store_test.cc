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
using ::testing::Not;

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

// "s3:/bucket/x" used to open a local folder named "s3:", so a copy "to S3" wrote to the disk.
TEST(Registry, AFaultyOrUnknownSchemeIsAnErrorNeverALocalPath) {
  for (const char* url : {"s3:/bucket/x", "s3:bucket/x", "S3:/bucket/x", "az:/container/x",
                          "file:/tmp/x", "nope://bucket/key", "nope:/bucket/key", "a+b.c-d:x"}) {
    SCOPED_TRACE(url);
    auto r = OpenUrl(url);
    ASSERT_FALSE(r.has_value()) << r->store->ToUrl(r->key);
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.error().message(), HasSubstr(url));
    for (const char* known : {"az", "file", "gs", "https", "s3"}) {
      EXPECT_THAT(r.error().message(), HasSubstr(known));
    }
    std::string scheme(url, std::string_view(url).find(':'));
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(UrlScheme(url), scheme);
  }
  auto one_slash = OpenUrl("s3:/bucket/x");
  EXPECT_THAT(one_slash.error().message(), HasSubstr("'s3:' must be followed by '//'"));
  EXPECT_THAT(one_slash.error().message(), HasSubstr("./s3:/bucket/x"));
  EXPECT_THAT(OpenUrl("nope:/x").error().message(), HasSubstr("'nope' is not a known URL scheme"));
  // A query (where a SAS token goes) is never shown.
  EXPECT_THAT(OpenUrl("az:/c/x?sig=SECRET").error().message(), Not(HasSubstr("SECRET")));
}

TEST(Registry, PathsWithAColonAreLocalWhenTheyDoNotStartWithAScheme) {
  TempDir tmp;
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(tmp.path());
  auto relative = OpenUrl("./a:b/c");
  auto nested = OpenUrl("x/a:b");
  auto digit = OpenUrl("2024:data");
  std::filesystem::current_path(cwd);
  for (auto* r : {&relative, &nested, &digit}) ASSERT_TRUE(r->has_value()) << r->error().ToString();
  EXPECT_EQ(relative->store->LocalPath(relative->key).value(), tmp / "a:b" / "c");
  EXPECT_EQ(nested->store->LocalPath(nested->key).value(), tmp / "x" / "a:b");
  EXPECT_EQ(digit->store->LocalPath(digit->key).value(), tmp / "2024:data");
  auto absolute = OpenUrl((tmp / "a:b").string());
  ASSERT_TRUE(absolute.has_value());
  EXPECT_EQ(absolute->store->LocalPath(absolute->key).value(), tmp / "a:b");
  EXPECT_EQ(UrlScheme("./s3:/x"), "file");
  EXPECT_EQ(UrlScheme("s3:/x"), "s3");
}

}  // namespace
}  // namespace ferry::testing
