// The Files API's URLs, listing pages and error replies.
#include "storage/databricks/databricks_files_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ferry::internal_databricks {
namespace {

using ::testing::HasSubstr;

TEST(FilesApi, UrlsEncodeThePathButKeepItsSlashes) {
  EXPECT_EQ(FilesUrl("https://w.example", "/Volumes/c/s/v/a b/\xc3\xa9.mds"),
            "https://w.example/api/2.0/fs/files/Volumes/c/s/v/a%20b/%C3%A9.mds");
  EXPECT_EQ(DirectoriesUrl("https://w.example", "/Volumes/c/s/v/d", "", 0),
            "https://w.example/api/2.0/fs/directories/Volumes/c/s/v/d");
  EXPECT_EQ(
      DirectoriesUrl("https://w.example", "/Volumes/c/s/v", "t/+=", 500),
      "https://w.example/api/2.0/fs/directories/Volumes/c/s/v?page_size=500&page_token=t%2F%2B%3D");
}

TEST(FilesApi, ParsesAListingPage) {
  auto page = ParseDirectoryPage(
      R"({"contents":[{"path":"/Volumes/c/s/v/a.mds","is_directory":false,"file_size":67108864,)"
      R"("last_modified":1733000000123,"name":"a.mds"},)"
      R"({"path":"/Volumes/c/s/v/sub/","is_directory":true,"name":"sub"}],)"
      R"("next_page_token":"p2"})",
      "dbfs:/Volumes/c/s/v/");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->entries.size(), 2u);
  EXPECT_EQ(page->entries[0].path, "/Volumes/c/s/v/a.mds");
  EXPECT_EQ(page->entries[0].size, 67108864u);
  EXPECT_FALSE(page->entries[0].is_directory);
  ASSERT_TRUE(page->entries[0].mtime.has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(
                page->entries[0].mtime->time_since_epoch())
                .count(),
            1733000000123);
  EXPECT_EQ(page->entries[1].path, "/Volumes/c/s/v/sub");  // the trailing '/' goes
  EXPECT_TRUE(page->entries[1].is_directory);
  EXPECT_EQ(page->next_page_token, "p2");

  auto empty = ParseDirectoryPage("{}", "dbfs:/Volumes/c/s/v/");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->entries.empty());
  EXPECT_TRUE(empty->next_page_token.empty());
}

TEST(FilesApi, AMalformedListingIsDataLossNamingTheFolder) {
  for (const char* body : {"<html>", R"({"contents":{}})", R"({"contents":[{"name":"x"}]})",
                           R"({"contents":[{"path":"/V/x","file_size":"big"}]})",
                           R"({"contents":[{"path":"/V/x","file_size":-1}]})"}) {
    auto page = ParseDirectoryPage(body, "dbfs:/Volumes/c/s/v/d/");
    ASSERT_FALSE(page.ok()) << body;
    EXPECT_EQ(page.status().code(), StatusCode::kDataLoss) << body;
    EXPECT_THAT(page.status().message(), HasSubstr("dbfs:/Volumes/c/s/v/d/"));
  }
}

TEST(FilesApi, ErrorRepliesMapByTheirCodeThenTheirStatus) {
  auto status = [](int http, const char* body) {
    return DatabricksErrorToStatus(http::Response{http, {}, body}, "dbfs:/Volumes/c/s/v/k",
                                   "(hint)");
  };
  const Status missing =
      status(404, R"({"error_code":"NOT_FOUND","message":"The file does not exist.\nmore"})");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "dbfs:/Volumes/c/s/v/k: HTTP 404 NOT_FOUND: The file does not exist. (hint)");
  EXPECT_EQ(status(403, R"({"error_code":"PERMISSION_DENIED","message":"no"})").code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(status(401, R"({"error_code":"401","message":"Unauthorized"})").message(),
            "dbfs:/Volumes/c/s/v/k: HTTP 401: Unauthorized (hint)");
  EXPECT_EQ(status(429, R"({"error_code":"REQUEST_LIMIT_EXCEEDED"})").code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(status(400, R"({"error_code":"TEMPORARILY_UNAVAILABLE"})").code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(status(409, R"({"error_code":"ALREADY_EXISTS"})").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(status(502, "<html>bad gateway</html>").code(), StatusCode::kUnavailable);
  EXPECT_EQ(status(416, R"({"error_code":"INVALID_PARAMETER_VALUE"})").code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(status(400, "").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry::internal_databricks
