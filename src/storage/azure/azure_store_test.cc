// Request building of the Azure store, against RecordingTransport (and, for concurrency, a
// transport that completes requests later from its own thread). The real-server tests against
// Azurite live in tests/integration/.
#include "storage/azure/azure_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ferry/storage/registry.h"
#include "storage/azure/azure_auth.h"
#include "storage/http/recording_transport.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_azure {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr std::string_view kKey =
    "c2VjcmV0LWtleS1ieXRlcy1mb3ItdGVzdHMtb25seS0wMTIzNDU2Nzg5YWJjZGVmZ2hpams=";
constexpr std::string_view kSig = "s3cr3tS1gnature%2Bvalue%3D";
constexpr std::string_view kBlobBase = "https://myaccount.blob.core.windows.net/data/";
constexpr std::string_view kDate = "Tue, 07 Jan 2025 12:34:56 GMT";

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

EnvLookup KeyEnv() {
  return Env({{"AZURE_STORAGE_ACCOUNT", "myaccount"}, {"AZURE_STORAGE_KEY", std::string(kKey)}});
}

EnvLookup SasEnv() {
  return Env({{"AZURE_STORAGE_ACCOUNT", "myaccount"},
              {"AZURE_STORAGE_SAS_TOKEN", "?sv=2021-08-06&sp=rwdl&sig=" + std::string(kSig)}});
}

AzureStoreOptions TestOptions() {
  AzureStoreOptions options;
  options.retry.initial_backoff = std::chrono::milliseconds(1);
  options.retry.max_backoff = std::chrono::milliseconds(2);
  options.retry.max_attempts = 4;
  options.now = [] { return std::chrono::system_clock::from_time_t(1736253296); };
  return options;
}

struct Opened {
  std::shared_ptr<ObjectStore> store;
  std::string key;
};

Opened Open(std::string_view url, std::shared_ptr<http::Transport> transport,
            AzureStoreOptions options = TestOptions(), const EnvLookup& env = KeyEnv()) {
  auto opened = OpenAzureUrl(url, env, std::move(options), std::move(transport));
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return {};
  return {opened->store, opened->key};
}

http::Response Ok(int status = 200, std::string body = {}) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

http::Response AzureError(int status, std::string_view code, std::string_view message) {
  http::Response r;
  r.status = status;
  r.headers.Set("x-ms-error-code", std::string(code));
  r.body = fmt::format(
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{}</Code><Message>{}\n"
      "RequestId:0\nTime:2025-01-07T12:34:56Z</Message></Error>",
      code, message);
  return r;
}

// The query parameter `name` of `url`, decoded; "" when absent.
std::string Query(std::string_view url, std::string_view name) {
  const size_t q = url.find('?');
  if (q == std::string_view::npos) return "";
  std::string_view query = url.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return "";
}

// Checks that a recorded request carries the version, the pinned date and a correct signature.
void ExpectSigned(const http::RecordedRequest& recorded) {
  SCOPED_TRACE(recorded.method + " " + recorded.url);
  EXPECT_EQ(recorded.headers.Get("x-ms-version").value_or(""), kAzureApiVersion);
  EXPECT_EQ(recorded.headers.Get("x-ms-date").value_or(""), kDate);
  http::Request request;
  request.method = recorded.method;
  request.url = recorded.url;
  request.headers = recorded.headers;
  request.headers.Remove("Authorization");
  if (recorded.method == "PUT") request.body = ByteSource::FromView(recorded.body);
  const std::string expected = fmt::format(
      "SharedKey myaccount:{}",
      SharedKeySignature(Base64Decode(kKey).value(), SharedKeyStringToSign(request, "myaccount")));
  EXPECT_EQ(recorded.headers.Get("Authorization").value_or(""), expected);
}

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

TEST(AzureStore, SmallWriteIsOnePutBlob) {
  auto transport = std::make_shared<http::RecordingTransport>(
      [](const http::RecordedRequest&) { return Ok(201); });
  auto [store, key] = Open("az://data/small.txt", transport);
  ASSERT_TRUE(store->Put(key, "hello world").ok());
  ASSERT_TRUE(store->Put("empty", "").ok());
  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[0].url, std::string(kBlobBase) + "small.txt");
  EXPECT_EQ(requests[0].headers.Get("x-ms-blob-type").value_or(""), "BlockBlob");
  EXPECT_EQ(requests[0].body, "hello world");
  EXPECT_EQ(requests[1].body, "");
  for (const auto& r : requests) ExpectSigned(r);
}

AzureStoreOptions SmallBlocks(uint64_t limit = 10, uint64_t block = 4) {
  AzureStoreOptions options = TestOptions();
  options.single_put_limit = limit;
  options.block_size = block;
  return options;
}

// Checks a finished block upload: Put Blocks with equal-length ids whose bodies, in id order,
// make `data`; then one Put Block List naming them in order.
void ExpectBlockUpload(const std::vector<http::RecordedRequest>& requests, std::string_view data,
                       size_t blocks) {
  std::map<size_t, std::string> body_by_index;  // by the index decoded from the block id
  std::map<std::string, size_t> index_by_id;
  size_t id_length = 0;
  const http::RecordedRequest* list = nullptr;
  for (const auto& r : requests) {
    ExpectSigned(r);
    if (Query(r.url, "comp") == "blocklist") {
      EXPECT_EQ(list, nullptr) << "one Put Block List";
      list = &r;
      continue;
    }
    if (Query(r.url, "comp") != "block") continue;
    EXPECT_EQ(list, nullptr) << "no Put Block after the list";
    EXPECT_THAT(r.url, StartsWith(std::string(kBlobBase) + "big.bin?comp=block&blockid="));
    const std::string id = Query(r.url, "blockid");
    if (id_length == 0) id_length = id.size();
    EXPECT_EQ(id.size(), id_length) << "all ids have one length";
    const std::string raw = Base64Decode(id).value();
    const size_t index = std::stoul(raw.substr(raw.rfind('-') + 1));
    body_by_index[index] = r.body;
    index_by_id[id] = index;
  }
  ASSERT_EQ(body_by_index.size(), blocks);
  std::string joined;
  for (const auto& [index, body] : body_by_index) joined += body;
  EXPECT_EQ(joined, data);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->headers.Get("Content-Type").value_or(""), "application/xml");
  auto xml = ParseXml(list->body);
  ASSERT_TRUE(xml.ok());
  EXPECT_EQ(xml->name, "BlockList");
  std::vector<size_t> order;
  for (const XmlElement* latest : xml->Children("Latest"))
    order.push_back(index_by_id[latest->text]);
  std::vector<size_t> expected(blocks);
  for (size_t i = 0; i < blocks; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
}

TEST(AzureStore, LargeWriteGoesUpInBlocksThenABlockList) {
  auto transport = std::make_shared<http::RecordingTransport>(
      [](const http::RecordedRequest&) { return Ok(201); });
  auto [store, key] = Open("az://data/big.bin", transport, SmallBlocks());
  const std::string data = "abcdefghijk";  // 11 bytes: blocks of 4, 4, 3
  ASSERT_TRUE(store->Put(key, data).ok());
  const auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 4u);
  ExpectBlockUpload(requests, data, 3);
  EXPECT_EQ(requests[0].body, "abcd");
  EXPECT_EQ(requests[2].body, "ijk");
}

TEST(AzureStore, AFailedBlockIsRetriedOnItsOwn) {
  std::atomic<int> block_two_attempts = 0;
  auto transport = std::make_shared<http::RecordingTransport>([&](const http::RecordedRequest& r) {
    if (Query(r.url, "comp") == "block" && r.body == "efgh" && block_two_attempts++ == 0) {
      return AzureError(503, "ServerBusy", "Operations per second is over the account limit.");
    }
    return Ok(201);
  });
  auto [store, key] = Open("az://data/big.bin", transport, SmallBlocks());
  const std::string data = "abcdefghijk";
  ASSERT_TRUE(store->Put(key, data).ok());
  EXPECT_EQ(block_two_attempts.load(), 2);
  const auto requests = transport->requests();
  EXPECT_EQ(requests.size(), 5u);  // 3 blocks + 1 retry + the list
  // Only the successful attempts count toward the upload's blocks.
  std::vector<http::RecordedRequest> kept;
  bool dropped = false;
  for (const auto& r : requests) {
    if (!dropped && r.body == "efgh") {
      dropped = true;
      continue;
    }
    kept.push_back(r);
  }
  ExpectBlockUpload(kept, data, 3);
}

TEST(AzureStore, APermanentBlockFailureFailsTheWriteWithoutCommitting) {
  auto transport = std::make_shared<http::RecordingTransport>([&](const http::RecordedRequest& r) {
    if (r.body == "efgh") {
      return AzureError(403, "AuthorizationPermissionMismatch",
                        "This request is not authorized to perform this operation using this "
                        "permission.");
    }
    return Ok(201);
  });
  auto [store, key] = Open("az://data/big.bin", transport, SmallBlocks());
  const Status s = store->Put(key, "abcdefghijk");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("block 2 of 3"));
  EXPECT_THAT(s.message(), HasSubstr("AuthorizationPermissionMismatch"));
  for (const auto& r : transport->requests()) EXPECT_NE(Query(r.url, "comp"), "blocklist");
}

// Completes requests later, from its own thread, in reverse order of arrival: a stand-in for the
// curl transport's I/O thread, to see how many Put Blocks the store keeps in flight.
class DeferredTransport : public http::Transport {
 public:
  explicit DeferredTransport(http::RecordingTransport::Handler handler)
      : recorder_(std::make_shared<http::RecordingTransport>(std::move(handler))),
        worker_([this](std::stop_token stop) { Loop(stop); }) {}
  ~DeferredTransport() override {
    worker_.request_stop();
    cv_.notify_all();
  }

  void Submit(http::Request request, http::BodySink sink, http::Completion done) override {
    std::lock_guard lock(mu_);
    pending_.push_back({std::move(request), std::move(sink), std::move(done)});
    max_in_flight_ = std::max(max_in_flight_, pending_.size());
    cv_.notify_all();
  }

  size_t max_in_flight() const {
    std::lock_guard lock(mu_);
    return max_in_flight_;
  }
  std::vector<http::RecordedRequest> requests() const { return recorder_->requests(); }

 private:
  struct Pending {
    http::Request request;
    http::BodySink sink;
    http::Completion done;
  };

  void Loop(std::stop_token stop) {
    while (!stop.stop_requested()) {
      std::vector<Pending> batch;
      {
        std::unique_lock lock(mu_);
        // Let a few arrive, then finish them newest first.
        cv_.wait_for(lock, stop, std::chrono::milliseconds(5),
                     [&] { return pending_.size() >= 3; });
        while (!pending_.empty()) {
          batch.push_back(std::move(pending_.back()));
          pending_.pop_back();
        }
      }
      for (Pending& p : batch) {
        recorder_->Submit(std::move(p.request), std::move(p.sink), std::move(p.done));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::shared_ptr<http::RecordingTransport> recorder_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Pending> pending_;
  size_t max_in_flight_ = 0;
  std::jthread worker_;
};

TEST(AzureStore, BlocksGoUpInParallelWithinTheBound) {
  auto transport =
      std::make_shared<DeferredTransport>([](const http::RecordedRequest&) { return Ok(201); });
  AzureStoreOptions options = SmallBlocks(10, 3);
  options.max_blocks_in_flight = 3;
  auto [store, key] = Open("az://data/big.bin", transport, options);
  std::string data;
  for (int i = 0; i < 40; ++i) data += static_cast<char>('A' + i % 26);  // 14 blocks
  ASSERT_TRUE(store->Put(key, data).ok());
  EXPECT_LE(transport->max_in_flight(), 3u);
  EXPECT_GE(transport->max_in_flight(), 2u) << "blocks should overlap";
  ExpectBlockUpload(transport->requests(), data, 14);
}

// Three pages of a listing, chained by NextMarker; page size 2.
http::Response ListPage(const http::RecordedRequest& r) {
  const std::string marker = Query(r.url, "marker");
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
  EXPECT_EQ(Query(requests[1].url, "marker"), "m1");
  EXPECT_THAT(requests[2].url, HasSubstr("&marker=m2%20%2B%2F%3D&"));
  for (const auto& r : requests) {
    ExpectSigned(r);
    EXPECT_EQ(Query(r.url, "delimiter"), "/");
    EXPECT_EQ(Query(r.url, "prefix"), "p/");
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
        if (Query(r.url, "comp") == "list") {
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
      Env({{"AZURE_STORAGE_CONNECTION_STRING",
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" +
                std::string(kKey) + ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"}}));
  ASSERT_TRUE(store->Put(key, "x").ok());
  const auto r = transport->requests().at(0);
  EXPECT_EQ(r.url, "http://127.0.0.1:10000/devstoreaccount1/test/a%20b");
  http::Request request{r.method, r.url, r.headers, ByteSource::FromView(r.body), {}};
  EXPECT_THAT(SharedKeyStringToSign(request, "devstoreaccount1"),
              testing::EndsWith("\n/devstoreaccount1/devstoreaccount1/test/a%20b"));
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

}  // namespace
}  // namespace ferry::internal_azure
