// The volume store's requests against a recording transport: the Files API routes and headers,
// listings over pages and folders, the token each attempt carries, and errors that say what to
// check. tests/integration/databricks_test.cc runs the conformance suite against the loopback
// Files API server of scripts/test-servers.sh.
#include "storage/databricks/databricks_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "storage/databricks/databricks_files_api.h"
#include "storage/http/recording_transport.h"
#include "storage/testing/fake_env_testutil.h"
#include "storage/testing/oauth_testutil.h"

namespace ferry::internal_databricks {
namespace {

using internal_storage::AccessToken;
using internal_storage::AccessTokenProvider;
using ::testing::HasSubstr;

constexpr std::string_view kHost = "https://w.example";
constexpr std::string_view kApi = "https://w.example/api/2.0/fs/";

RetryPolicy FastRetry() {
  return RetryPolicy{.max_attempts = 4,
                     .initial_backoff = std::chrono::milliseconds(1),
                     .max_backoff = std::chrono::milliseconds(1)};
}

// A config whose tokens are "token-1", "token-2", ... (one per fetch).
DatabricksConfig Config(bool expiring, std::atomic<int>* fetches) {
  DatabricksConfig config;
  config.host = std::string(kHost);
  config.expiring = expiring;
  config.token_provider = std::make_shared<AccessTokenProvider>(
      "test tokens", [expiring, fetches]() -> Result<AccessToken> {
        const int n = ++*fetches;
        AccessToken token{"token-" + std::to_string(n), std::nullopt};
        if (expiring) token.expiration = std::chrono::system_clock::now() + std::chrono::hours(1);
        return token;
      });
  return config;
}

class DatabricksStoreTest : public ::testing::Test {
 protected:
  std::shared_ptr<ObjectStore> Store(http::RecordingTransport::Handler handler,
                                     bool expiring = false) {
    transport_ = std::make_shared<http::RecordingTransport>(std::move(handler));
    return MakeDatabricksStore(Config(expiring, &fetches_), "/Volumes/c/s/v",
                               DatabricksStoreOptions{.list_page_size = 2, .retry = FastRetry()},
                               transport_);
  }
  std::atomic<int> fetches_{0};
  std::shared_ptr<http::RecordingTransport> transport_;
};

TEST_F(DatabricksStoreTest, HeadReadWriteAndRemoveUseTheFilesRoutes) {
  auto store = Store([](const http::RecordedRequest& r) -> Result<http::Response> {
    http::Response reply{200, {}, ""};
    reply.headers.Add("Content-Length", "5");
    reply.headers.Add("Last-Modified", "Wed, 02 Dec 2026 10:00:00 GMT");
    if (r.method == "GET") reply.body = "hello";
    if (r.method == "PUT" || r.method == "DELETE") reply.status = 204;
    return reply;
  });
  EXPECT_EQ(store->ToUrl("a b/x.mds"), "dbfs:/Volumes/c/s/v/a b/x.mds");
  auto info = store->Head("a b/x.mds");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, 5u);
  EXPECT_TRUE(info->mtime.has_value());
  EXPECT_EQ(store->Get("a b/x.mds").value_or(""), "hello");
  ASSERT_TRUE(store->Put("a b/x.mds", "hello").ok());
  ASSERT_TRUE(store->Remove("a b/x.mds").ok());

  const auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 4u);
  const std::string file = std::string(kApi) + "files/Volumes/c/s/v/a%20b/x.mds";
  EXPECT_EQ(requests[0].method, "HEAD");
  EXPECT_EQ(requests[0].url, file);
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[2].method, "PUT");
  EXPECT_EQ(requests[2].url, file + "?overwrite=true");
  EXPECT_EQ(requests[2].body, "hello");
  EXPECT_EQ(requests[2].headers.Get("Content-Type").value_or(""), "application/octet-stream");
  EXPECT_EQ(requests[3].method, "DELETE");
  for (const auto& r : requests) {
    EXPECT_EQ(r.headers.Get("Authorization").value_or(""), "Bearer token-1") << r.method;
  }
  EXPECT_EQ(fetches_.load(), 1);  // a token that does not expire is fetched once
}

TEST_F(DatabricksStoreTest, BadKeysAndHugeFilesAreRefusedWithoutARequest) {
  auto store = Store({});
  EXPECT_EQ(store->Head("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Head("a/../b").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Put("a//b", "x").code(), StatusCode::kInvalidArgument);
  ByteSource huge;
  huge.size = kMaxUploadBytes + 1;
  huge.read = [](uint64_t, char*, size_t) -> Result<size_t> { return size_t{0}; };
  const Status refused = store->Write("big.bin", huge);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("5 GiB"));
  EXPECT_THAT(refused.message(), HasSubstr("dbfs:/Volumes/c/s/v/big.bin"));
  EXPECT_TRUE(transport_->requests().empty());
}

// A tree of folders, listed two entries a page:
//   /Volumes/c/s/v/tree/{a, b/c, b/d/e, f}, treetop, other/x
TEST_F(DatabricksStoreTest, ListsFolderByFolderAndPageByPage) {
  const std::map<std::string, std::vector<std::pair<std::string, bool>>> tree = {
      {"", {{"tree", true}, {"treetop", false}, {"other", true}}},
      {"/tree", {{"a", false}, {"b", true}, {"f", false}}},
      {"/tree/b", {{"c", false}, {"d", true}}},
      {"/tree/b/d", {{"e", false}}},
      {"/other", {{"x", false}}},
  };
  auto store = Store([&](const http::RecordedRequest& r) -> Result<http::Response> {
    const std::string prefix = std::string(kApi) + "directories/Volumes/c/s/v";
    std::string folder = r.url.substr(prefix.size(), r.url.find('?') - prefix.size());
    const auto it = tree.find(folder);
    if (it == tree.end()) {
      return testing::JsonReply(404, R"({"error_code":"NOT_FOUND","message":"no such dir"})");
    }
    const std::string token = http::QueryParam(r.url, "page_token");
    const size_t start = token.empty() ? 0 : std::stoul(token);
    EXPECT_EQ(http::QueryParam(r.url, "page_size"), "2");
    nlohmann::json page;
    page["contents"] = nlohmann::json::array();
    for (size_t i = start; i < std::min(start + 2, it->second.size()); ++i) {
      const auto& [name, dir] = it->second[i];
      page["contents"].push_back(
          {{"path", "/Volumes/c/s/v" + folder + "/" + name + (dir ? "/" : "")},
           {"is_directory", dir},
           {"file_size", dir ? 0 : 3},
           {"name", name}});
    }
    if (start + 2 < it->second.size()) page["next_page_token"] = std::to_string(start + 2);
    return testing::JsonReply(200, page.dump());
  });
  auto keys = [](const ListResult& l) {
    std::vector<std::string> out;
    for (const auto& o : l.objects) out.push_back(o.key);
    return out;
  };
  auto all = store->List("tree/", true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(keys(*all), (std::vector<std::string>{"tree/a", "tree/b/c", "tree/b/d/e", "tree/f"}));
  EXPECT_TRUE(all->prefixes.empty());
  EXPECT_EQ(all->objects[0].size, 3u);

  auto level = store->List("tree/", false);
  ASSERT_TRUE(level.ok());
  EXPECT_EQ(keys(*level), (std::vector<std::string>{"tree/a", "tree/f"}));
  EXPECT_EQ(level->prefixes, (std::vector<std::string>{"tree/b/"}));

  auto partial = store->List("tree", true);  // a string prefix: tree/... and treetop
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->objects.size(), 5u);

  auto none = store->List("missing/", true);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->objects.empty());
}

// 40 class folders of an ImageFolder: listed several at once (each is a round trip), every file
// found.
TEST_F(DatabricksStoreTest, ARecursiveListingListsFoldersAtOnce) {
  std::atomic<int> in_flight{0}, most{0};
  auto store = Store([&](const http::RecordedRequest& r) -> Result<http::Response> {
    const int now = ++in_flight;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --in_flight;
    const std::string prefix = std::string(kApi) + "directories/Volumes/c/s/v";
    const std::string folder = r.url.substr(prefix.size(), r.url.find('?') - prefix.size());
    nlohmann::json page;
    page["contents"] = nlohmann::json::array();
    if (folder == "/images") {
      for (int c = 0; c < 40; ++c) {
        page["contents"].push_back(
            {{"path", fmt::format("/Volumes/c/s/v/images/c{:02}/", c)}, {"is_directory", true}});
      }
    } else {
      page["contents"].push_back(
          {{"path", fmt::format("/Volumes/c/s/v{}/x.jpg", folder)}, {"file_size", 1}});
    }
    return testing::JsonReply(200, page.dump());
  });
  auto all = store->List("images/", true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->objects.size(), 40u);
  EXPECT_EQ(all->objects[17].key, "images/c17/x.jpg");
  EXPECT_GT(most.load(), 1) << "folders listed one after another";
  EXPECT_LE(most.load(), 16);
}

TEST_F(DatabricksStoreTest, ARefusedFolderFailsARecursiveListing) {
  // A folder that is refused fails the whole listing, naming it, while the others are listed.
  auto store = Store([&](const http::RecordedRequest& r) -> Result<http::Response> {
    nlohmann::json page;
    page["contents"] = nlohmann::json::array();
    if (r.url.find("/c07") != std::string::npos) {
      return testing::JsonReply(403, R"({"error_code":"PERMISSION_DENIED","message":"no"})");
    }
    if (r.url.ends_with("directories/Volumes/c/s/v") || r.url.find("v?") != std::string::npos) {
      for (int c = 0; c < 20; ++c) {
        page["contents"].push_back(
            {{"path", fmt::format("/Volumes/c/s/v/c{:02}/", c)}, {"is_directory", true}});
      }
    }
    return testing::JsonReply(200, page.dump());
  });
  auto all = store->List("", true);
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(all.status().message(), HasSubstr("c07"));
}

TEST_F(DatabricksStoreTest, AnExpiredOAuthTokenIsReplacedAndTheRequestRetried) {
  auto store = Store(
      [](const http::RecordedRequest& r) -> Result<http::Response> {
        if (r.headers.Get("Authorization") == "Bearer token-1") {
          return testing::JsonReply(401, R"({"error_code":"401","message":"Token expired"})");
        }
        http::Response reply{200, {}, "data"};
        reply.headers.Add("Content-Length", "4");
        return reply;
      },
      /*expiring=*/true);
  EXPECT_EQ(store->Get("k").value_or("<error>"), "data");
  EXPECT_EQ(fetches_.load(), 2);
  EXPECT_TRUE(store->Head("k").ok());
  EXPECT_EQ(fetches_.load(), 2);  // the new token stays
}

TEST_F(DatabricksStoreTest, ARefusedPersonalTokenIsFinalAndSaysWhatToCheck) {
  auto store = Store([](const http::RecordedRequest& r) -> Result<http::Response> {
    if (r.method == "HEAD") return http::Response{401, {}, ""};
    return testing::JsonReply(401, R"({"error_code":"401","message":"Invalid access token."})");
  });
  auto head = store->Head("k");
  ASSERT_FALSE(head.ok());
  EXPECT_EQ(head.status().code(), StatusCode::kUnauthenticated);
  // The HEAD's bodiless reply is asked again as a GET, for the service's message.
  EXPECT_THAT(head.status().message(), HasSubstr("Invalid access token."));
  EXPECT_THAT(head.status().message(), HasSubstr("test tokens"));
  EXPECT_THAT(head.status().message(), HasSubstr("https://w.example"));
  EXPECT_THAT(head.status().message(), ::testing::Not(HasSubstr("token-1")));
  EXPECT_EQ(transport_->requests().size(), 2u);  // HEAD, then GET for the message; no retry
}

TEST_F(DatabricksStoreTest, AForbiddenVolumeNamesThePrivilegesItNeeds) {
  auto store = Store([](const http::RecordedRequest&) -> Result<http::Response> {
    return testing::JsonReply(403, R"({"error_code":"PERMISSION_DENIED","message":"denied"})");
  });
  const Status put = store->Put("k", "x");
  EXPECT_EQ(put.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(put.message(), HasSubstr("WRITE VOLUME"));
  EXPECT_THAT(put.message(), HasSubstr("/Volumes/c/s/v"));
  auto listing = store->List("", true);
  EXPECT_EQ(listing.status().code(), StatusCode::kPermissionDenied);
}

TEST_F(DatabricksStoreTest, ThrottlingIsRetried) {
  int calls = 0;
  auto store = Store([&](const http::RecordedRequest&) -> Result<http::Response> {
    if (++calls < 3) {
      return testing::JsonReply(429, R"({"error_code":"REQUEST_LIMIT_EXCEEDED","message":"slow"})");
    }
    return http::Response{204, {}, ""};
  });
  EXPECT_TRUE(store->Remove("k").ok());
  EXPECT_EQ(calls, 3);
}

TEST(OpenCachedDatabricksUrl, AMountedVolumeIsReadAsLocalFiles) {
  ferry::testing::TempDir root;
  std::filesystem::create_directories(root / "main" / "ml" / "images" / "train");
  ASSERT_TRUE(
      WriteFileAtomically(root / "main" / "ml" / "images" / "train" / "x.mds", "local").ok());
  // No workspace and no credentials: the FUSE folder needs neither.
  testing::FakeEnv env{{"FERRY_DATABRICKS_VOLUMES_ROOT", root.path().string()},
                       {"HOME", "/nonexistent"}};
  auto opened = OpenCachedDatabricksUrl("dbfs:/Volumes/main/ml/images/train/x.mds", env);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->store->scheme(), "file");
  EXPECT_EQ(opened->store->Get(opened->key).value_or(""), "local");

  // Another volume is not mounted: it needs a workspace, and says so.
  auto remote = OpenCachedDatabricksUrl("dbfs:/Volumes/main/ml/other/x.mds", env);
  ASSERT_FALSE(remote.ok());
  EXPECT_THAT(remote.status().message(), HasSubstr("DATABRICKS_HOST"));
}

TEST(OpenCachedDatabricksUrl, ATokenRotatedInTheConfigurationFileGetsANewStore) {
  ferry::testing::TempDir tmp;
  auto write = [&](const char* token) {
    ASSERT_TRUE(WriteFileAtomically(tmp / "cfg", fmt::format("[DEFAULT]\nhost = https://w.example"
                                                             "\ntoken = {}\n",
                                                             token))
                    .ok());
  };
  testing::FakeEnv env{{"DATABRICKS_CONFIG_FILE", (tmp / "cfg").string()},
                       {"FERRY_DATABRICKS_FUSE", "false"}};
  write("dapi-first");
  auto first = OpenCachedDatabricksUrl("dbfs:/Volumes/c/s/v/x", env);
  auto again = OpenCachedDatabricksUrl("dbfs:/Volumes/c/s/v/y", env);
  ASSERT_TRUE(first.ok() && again.ok()) << first.status().ToString();
  EXPECT_EQ(first->store, again->store);  // one store per volume and settings
  write("dapi-second");
  auto rotated = OpenCachedDatabricksUrl("dbfs:/Volumes/c/s/v/x", env);
  ASSERT_TRUE(rotated.ok());
  EXPECT_NE(rotated->store, first->store);
}

TEST(DbfsRegistration, TheSingleSlashFormIsAUrl) {
  EXPECT_TRUE(CheckUrlSyntax("dbfs:/Volumes/c/s/v/x").ok());
  EXPECT_TRUE(CheckUrlSyntax("dbfs:///Volumes/c/s/v/x").ok());
  const Status bad = CheckUrlSyntax("dbfs:Volumes/c/s/v");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("dbfs:/..."));
  // Other schemes still need "//".
  EXPECT_FALSE(CheckUrlSyntax("file:/tmp/x").ok());
}

}  // namespace
}  // namespace ferry::internal_databricks
