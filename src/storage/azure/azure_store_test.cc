// Request building of the Azure store against RecordingTransport: reads, lists, removes,
// retries, credentials and errors (writes: azure_store_write_test.cc). The real-server tests
// against Azurite live in tests/integration/.
#include "storage/azure/azure_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "ferry/storage/registry.h"
#include "storage/azure/azure_auth.h"
#include "storage/azure/azure_store_testutil.h"
#include "storage/http/recording_transport.h"
#include "storage/testing/fake_env_testutil.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_azure {
namespace {

using azure_test::AzureError;
using azure_test::ExpectSigned;
using azure_test::kBlobBase;
using azure_test::KeyEnv;
using azure_test::kKey;
using azure_test::kSig;
using azure_test::Ok;
using azure_test::Open;
using azure_test::SasEnv;
using azure_test::SmallBlocks;
using azure_test::TestOptions;
using http::QueryParam;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(AzureStore, HeadSignsAndReadsProperties) {
  auto transport = std::make_shared<http::RecordingTransport>([](const http::RecordedRequest&) {
    http::Response r = Ok();
    r.headers.Set("Content-Length", "42");
    r.headers.Set("ETag", "\"0x8DC0123456789AB\"");
    r.headers.Set("Last-Modified", "Tue, 07 Jan 2025 12:34:56 GMT");
    return r;
  });
  auto [store, key] = Open("az://data/dir/a b.bin", transport);
  auto info = store->Head(key);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->key, "dir/a b.bin");
  EXPECT_EQ(info->size, 42u);
  EXPECT_EQ(info->etag, "0x8DC0123456789AB");
  ASSERT_EQ(transport->requests().size(), 1u);
  const auto r = transport->requests().at(0);
  EXPECT_EQ(r.method, "HEAD");
  EXPECT_EQ(r.url, std::string(kBlobBase) + "dir/a%20b.bin");
  ExpectSigned(r);
}

TEST(AzureStore, HeadOfMissingBlobIsNotFound) {
  auto transport = std::make_shared<http::RecordingTransport>([](const http::RecordedRequest&) {
    http::Response r;
    r.status = 404;
    r.headers.Set("x-ms-error-code", "BlobNotFound");
    return r;
  });
  auto [store, key] = Open("az://data/missing", transport);
  auto info = store->Head(key);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(info.status().message(), "az://data/missing: BlobNotFound (HTTP 404)");
  EXPECT_EQ(transport->requests().size(), 1u);  // not retried
}

// Serves `object` for GETs, honouring Range like the service (206 + Content-Range).
http::Response ServeRange(const http::RecordedRequest& r, std::string_view object) {
  http::Response response;
  response.headers.Set("ETag", "\"0x8DC1\"");
  auto range = r.headers.Get("Range");
  if (!range) {
    response.status = 200;
    response.headers.Set("Content-Length", std::to_string(object.size()));
    response.body = std::string(object);
    return response;
  }
  // bytes=a-b or bytes=a-
  std::string_view spec = range->substr(6);
  uint64_t first = 0;
  uint64_t last = object.size() - 1;
  const size_t dash = spec.find('-');
  std::from_chars(spec.data(), spec.data() + dash, first);
  if (dash + 1 < spec.size()) {
    std::from_chars(spec.data() + dash + 1, spec.data() + spec.size(), last);
  }
  last = std::min<uint64_t>(last, object.size() - 1);
  response.status = 206;
  response.headers.Set("Content-Range", fmt::format("bytes {}-{}/{}", first, last, object.size()));
  response.body = std::string(object.substr(first, last - first + 1));
  return response;
}

TEST(AzureStore, ReadSendsTheRangeFromResumableGet) {
  const std::string object = "0123456789abcdef";
  auto transport = std::make_shared<http::RecordingTransport>(
      [&](const http::RecordedRequest& r) { return ServeRange(r, object); });
  auto [store, key] = Open("az://data/obj", transport);
  auto got = store->GetRange(key, 3, 5);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "34567");
  auto whole = store->Get(key);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, object);

  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].url, std::string(kBlobBase) + "obj");
  EXPECT_EQ(requests[0].headers.Get("Range").value_or(""), "bytes=3-7");
  EXPECT_FALSE(requests[1].headers.Get("Range"));
  for (const auto& r : requests) ExpectSigned(r);
}

TEST(AzureStore, ReadResumesWithASignedRangeAndIfMatch) {
  const std::string object = "0123456789";
  int calls = 0;
  auto transport = std::make_shared<http::RecordingTransport>([&](const http::RecordedRequest& r) {
    http::Response response = ServeRange(r, object);
    if (++calls == 1) response.body.resize(4);  // the connection "breaks" after 4 bytes
    return response;
  });
  auto [store, key] = Open("az://data/obj", transport);
  auto info = store->Read(key, ByteRange{}, [](std::string_view) { return Status::Ok(); });
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->key, "obj");
  EXPECT_EQ(info->size, 10u);
  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].headers.Get("Range").value_or(""), "bytes=4-");
  EXPECT_EQ(requests[1].headers.Get("If-Match").value_or(""), "\"0x8DC1\"");
  ExpectSigned(requests[1]);  // Range and If-Match are in the signed string
}

TEST(AzureStore, ReadPastTheEndIsOutOfRange) {
  auto transport = std::make_shared<http::RecordingTransport>([](const http::RecordedRequest&) {
    return AzureError(416, "InvalidRange",
                      "The range specified is invalid for the current size of the resource.");
  });
  auto [store, key] = Open("az://data/obj", transport);
  auto got = store->GetRange(key, 100, 5);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kOutOfRange);
}

http::Response ListPage(const http::RecordedRequest& r) {
  const std::string marker = QueryParam(r.url, "marker");
  std::string blobs;
  std::string next;
  if (marker.empty()) {
    blobs =
        "<Blob><Name>p/b</Name><Properties><Content-Length>2</Content-Length></Properties>"
        "</Blob><Blob><Name>p/a</Name><Properties><Content-Length>1</Content-Length>"
        "</Properties></Blob>";
    next = "m1";
  } else if (marker == "m1") {
    blobs =
        "<Blob><Name>p/c d</Name><Properties><Content-Length>3</Content-Length>"
        "<Etag>0x1</Etag></Properties></Blob><BlobPrefix><Name>p/sub/</Name></BlobPrefix>";
    next = "m2 +/=";
  } else if (marker == "m2 +/=") {
    blobs =
        "<Blob><Name>p/e</Name><Properties><Content-Length>5</Content-Length></Properties>"
        "</Blob>";
  } else {
    return AzureError(400, "InvalidQueryParameterValue", "bad marker");
  }
  return Ok(200, fmt::format("<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults>"
                             "<Blobs>{}</Blobs><NextMarker>{}</NextMarker></EnumerationResults>",
                             blobs, next));
}

TEST(AzureStore, ListFollowsNextMarkerAcrossPages) {
  auto transport = std::make_shared<http::RecordingTransport>(ListPage);
  AzureStoreOptions options = TestOptions();
  options.list_page_size = 2;
  auto [store, key] = Open("az://data/", transport, options);
  auto listed = store->List("p/", /*recursive=*/false);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> keys;
  for (const auto& o : listed->objects) keys.push_back(o.key);
  EXPECT_THAT(keys, ElementsAre("p/a", "p/b", "p/c d", "p/e"));  // sorted
  EXPECT_EQ(listed->objects[2].size, 3u);
  EXPECT_EQ(listed->objects[2].etag, "0x1");
  EXPECT_THAT(listed->prefixes, ElementsAre("p/sub/"));

  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].url,
            "https://myaccount.blob.core.windows.net/data?restype=container&comp=list&prefix=p%2F&"
            "delimiter=%2F&maxresults=2");
  EXPECT_EQ(QueryParam(requests[1].url, "marker"), "m1");
  EXPECT_THAT(requests[2].url, HasSubstr("&marker=m2%20%2B%2F%3D&"));
  for (const auto& r : requests) {
    ExpectSigned(r);
    EXPECT_EQ(QueryParam(r.url, "delimiter"), "/");
    EXPECT_EQ(QueryParam(r.url, "prefix"), "p/");
  }
}

TEST(AzureStore, RecursiveListHasNoDelimiter) {
  auto transport = std::make_shared<http::RecordingTransport>([](const http::RecordedRequest&) {
    return Ok(200,
              "<EnumerationResults><Blobs><Blob><Name>a/b/c</Name><Properties>"
              "<Content-Length>1</Content-Length></Properties></Blob></Blobs><NextMarker/>"
              "</EnumerationResults>");
  });
  auto [store, key] = Open("az://data", transport);
  auto listed = store->List("", /*recursive=*/true);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->objects.size(), 1u);
  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].url,
            "https://myaccount.blob.core.windows.net/data?restype=container&comp=list");
}

TEST(AzureStore, ListOfMissingContainerIsNotFound) {
  auto transport = std::make_shared<http::RecordingTransport>([](const http::RecordedRequest&) {
    return AzureError(404, "ContainerNotFound", "The specified container does not exist.");
  });
  auto [store, key] = Open("az://nothere", transport);
  auto listed = store->List("", true);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(listed.status().message(), HasSubstr("ContainerNotFound"));
}

TEST(AzureStore, RemoveDeletesWithSnapshotsAndIgnoresMissingBlobs) {
  int calls = 0;
  auto transport = std::make_shared<http::RecordingTransport>([&](const http::RecordedRequest&) {
    switch (calls++) {
      case 0:
        return Ok(202);
      case 1:
        return AzureError(404, "BlobNotFound", "The specified blob does not exist.");
      default:
        return AzureError(404, "ContainerNotFound", "The specified container does not exist.");
    }
  });
  auto [store, key] = Open("az://data/x/y", transport);
  EXPECT_TRUE(store->Remove(key).ok());
  EXPECT_TRUE(store->Remove(key).ok());
  const Status s = store->Remove(key);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "DELETE");
  EXPECT_EQ(requests[0].url, std::string(kBlobBase) + "x/y");
  EXPECT_EQ(requests[0].headers.Get("x-ms-delete-snapshots").value_or(""), "include");
  ExpectSigned(requests[0]);
}

TEST(AzureStore, TransientErrorsAreRetried) {
  int calls = 0;
  auto transport = std::make_shared<http::RecordingTransport>(
      [&](const http::RecordedRequest&) -> Result<http::Response> {
        switch (calls++) {
          case 0:
            return UnavailableError("connection reset");
          case 1:
            return AzureError(500, "InternalError", "The server encountered an internal error.");
          default: {
            http::Response r = Ok();
            r.headers.Set("Content-Length", "1");
            return r;
          }
        }
      });
  auto [store, key] = Open("az://data/k", transport);
  auto info = store->Head(key);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(calls, 3);
}

TEST(AzureStore, SasIsAppendedToEveryRequestAndNeverShown) {
  auto transport = std::make_shared<http::RecordingTransport>(
      [&](const http::RecordedRequest& r) -> Result<http::Response> {
        if (r.method == "HEAD") return AzureError(404, "BlobNotFound", "gone");
        if (r.method == "DELETE") {
          // A transport failure that quotes the URL it was given.
          return UnavailableError(fmt::format("DELETE {}: connection refused", r.url));
        }
        if (QueryParam(r.url, "comp") == "list") {
          return Ok(200, "<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>");
        }
        return Ok(201);
      });
  auto [store, key] = Open("az://data/k", transport, SmallBlocks(), SasEnv());
  ASSERT_TRUE(store->Put(key, "abcdefghijk").ok());
  ASSERT_TRUE(store->List("", true).ok());
  const Status head = store->Head(key).status();
  const Status remove = store->Remove(key);
  for (const auto& r : transport->requests()) {
    SCOPED_TRACE(r.url);
    EXPECT_FALSE(r.headers.Get("Authorization"));
    EXPECT_THAT(r.url, HasSubstr("sv=2021-08-06&sp=rwdl&sig=" + std::string(kSig)));
    EXPECT_EQ(r.url.find('?'), r.url.rfind('?')) << "one query string";
    EXPECT_EQ(r.url.find("sig="), r.url.rfind("sig=")) << "the token once";
  }
  EXPECT_EQ(head.code(), StatusCode::kNotFound);
  EXPECT_EQ(remove.code(), StatusCode::kUnavailable);
  for (const Status& s : {head, remove}) {
    SCOPED_TRACE(s.ToString());
    EXPECT_THAT(s.message(), Not(HasSubstr("s3cr3t")));
    EXPECT_THAT(s.message(), HasSubstr("data/k"));
  }
}

TEST(AzureStore, WrongKeyIsUnauthenticatedAndLeaksNothing) {
  auto transport = std::make_shared<http::RecordingTransport>([](const http::RecordedRequest& r) {
    // The service's detail quotes the signature it got; a careless server might echo more.
    http::Response response =
        AzureError(403, "AuthenticationFailed",
                   fmt::format("Server failed to authenticate the request. {}",
                               r.headers.Get("Authorization").value_or("")));
    return response;
  });
  auto [store, key] = Open("az://data/k", transport);
  for (const Status& s : {store->Head(key).status(), store->Get(key).status(), store->Put(key, "x"),
                          store->List("", true).status(), store->Remove(key)}) {
    SCOPED_TRACE(s.ToString());
    EXPECT_EQ(s.code(), StatusCode::kUnauthenticated);
    EXPECT_THAT(s.message(), HasSubstr("AuthenticationFailed"));
    EXPECT_THAT(s.message(), Not(HasSubstr(std::string(kKey))));
  }
}

// Errors name the blob as the user wrote it, never the endpoint the request went to.
TEST(AzureStore, ErrorsNameTheAzUrlNotTheEndpoint) {
  auto transport = std::make_shared<http::RecordingTransport>(
      [](const http::RecordedRequest& r) -> Result<http::Response> {
        if (r.method == "DELETE") {
          return UnavailableError(fmt::format("DELETE {}: connection refused", r.url));
        }
        return AzureError(404, "ContainerNotFound", "The specified container does not exist.");
      });
  AzureStoreOptions options = SmallBlocks();
  options.retry.max_attempts = 1;
  auto [store, key] = Open("az://data/dir/k", transport, options);
  const std::vector<std::pair<Status, std::string>> errors = {
      {store->Head(key).status(), "az://data/dir/k: "},
      {store->Get(key).status(), "az://data/dir/k: "},
      {store->Put(key, "x"), "az://data/dir/k: "},
      {store->Put(key, "abcdefghijk"), "az://data/dir/k: "},
      {store->List("dir/", true).status(), "az://data/dir/: "},
      {store->Remove(key), "az://data/dir/k: "}};
  for (const auto& [s, start] : errors) {
    SCOPED_TRACE(s.ToString());
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr(start));
    EXPECT_EQ(s.message().find("az://data/"), s.message().rfind("az://data/")) << "named once";
    if (s.code() == StatusCode::kNotFound) {
      EXPECT_THAT(s.message(), Not(HasSubstr("blob.core.windows.net")));
    }
  }
  // A transport failure names the endpoint it could not reach, after the blob.
  EXPECT_THAT(errors.back().first.message(), StartsWith("az://data/dir/k: "));
  EXPECT_THAT(errors.back().first.message(),
              HasSubstr("DELETE https://myaccount.blob.core.windows.net/data/dir/k"));
}

// A HEAD reply has no body, only x-ms-error-code: a refused HEAD learns the message (which tells
// Azurite's bad signature from a missing permission) from the same request as a GET.
TEST(AzureStore, ARefusedHeadNamesTheReasonAGetReplyGives) {
  auto transport = std::make_shared<http::RecordingTransport>(
      [](const http::RecordedRequest& r) -> Result<http::Response> {
        http::Response refused =
            AzureError(403, "AuthorizationFailure", "Server failed to authenticate the request.");
        if (r.method == "HEAD") refused.body.clear();
        return refused;
      });
  auto [store, key] = Open("az://data/k", transport);
  const Status s = store->Head(key).status();
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << s.ToString();
  EXPECT_EQ(s.message(),
            "az://data/k: AuthorizationFailure: Server failed to authenticate the request.");
  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].headers.Get("Range").value_or(""), "bytes=0-0");
  ExpectSigned(requests[1]);
}

TEST(AzureStore, EmptyKeyIsInvalid) {
  auto transport = std::make_shared<http::RecordingTransport>();
  auto [store, key] = Open("az://data/", transport);
  EXPECT_EQ(key, "");
  EXPECT_EQ(store->Head(key).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Put(key, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Remove(key).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(transport->requests().empty());
}

TEST(AzureStore, EmulatorEndpointIsPathStyle) {
  auto transport = std::make_shared<http::RecordingTransport>(
      [](const http::RecordedRequest&) { return Ok(201); });
  auto [store, key] = Open(
      "az://test/a b", transport, TestOptions(),
      testing::FakeEnv(
          {{"AZURE_STORAGE_CONNECTION_STRING",
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" +
                std::string(kKey) + ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"}}));
  ASSERT_TRUE(store->Put(key, "x").ok());
  const auto r = transport->requests().at(0);
  EXPECT_EQ(r.url, "http://127.0.0.1:10000/devstoreaccount1/test/a%20b");
  http::Request request{r.method, r.url, r.headers, ByteSource::FromView(r.body), {}};
  EXPECT_THAT(SharedKeyStringToSign(request, "devstoreaccount1"),
              ::testing::EndsWith("\n/devstoreaccount1/devstoreaccount1/test/a%20b"));
}

TEST(AzureStore, SchemesAreRegisteredAndUrlsRoundTrip) {
  const auto schemes = RegisteredSchemes();
  for (const char* scheme : {"az", "abfs", "abfss"}) {
    EXPECT_NE(std::find(schemes.begin(), schemes.end(), scheme), schemes.end()) << scheme;
  }
  // Names the account, so it opens whatever the environment holds.
  auto opened = OpenUrl("abfss://data@myaccount.dfs.core.windows.net/dir/file.bin");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->store->scheme(), "abfss");
  EXPECT_EQ(opened->key, "dir/file.bin");
  EXPECT_EQ(opened->store->ToUrl("other key"),
            "abfss://data@myaccount.dfs.core.windows.net/other key");

  auto transport = std::make_shared<http::RecordingTransport>();
  for (const char* url : {"az://data/a/b c+d", "abfs://data@myaccount.dfs.core.windows.net/x"}) {
    auto [store, key] = Open(url, transport);
    EXPECT_EQ(store->ToUrl(key), url);
    auto again = OpenAzureUrl(store->ToUrl(key), KeyEnv(), TestOptions(), transport);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->key, key);
    EXPECT_EQ(again->store->scheme(), store->scheme());
  }
}

TEST(AzureStore, TheRegistryCachesOneStorePerContainerUrlFormAndCredentials) {
  auto a = OpenCachedAzureUrl("az://data/a", KeyEnv());
  auto b = OpenCachedAzureUrl("az://data/b/c", KeyEnv());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->store.get(), b->store.get());
  EXPECT_EQ(b->key, "b/c");
  for (const auto& [url, env] : std::vector<std::pair<std::string, EnvLookup>>{
           {"az://other/a", KeyEnv()},
           {"az://data/a", SasEnv()},
           {"abfss://data@myaccount.dfs.core.windows.net/a", KeyEnv()}}) {
    auto other = OpenCachedAzureUrl(url, env);
    ASSERT_TRUE(other.ok()) << url << ": " << other.status().ToString();
    EXPECT_NE(other->store.get(), a->store.get()) << url;
    EXPECT_EQ(other->store->ToUrl(other->key), url);
  }
  EXPECT_EQ(OpenCachedAzureUrl("az:///k", KeyEnv()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry::internal_azure
