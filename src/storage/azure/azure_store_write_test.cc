// Writes of the Azure store against RecordingTransport: one Put Blob for a small object, blocks
// and a block list for a large one, retries of a failed block alone, and blocks in parallel within
// the bound (a transport that completes requests later from its own thread).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "storage/azure/azure_store.h"
#include "storage/azure/azure_store_testutil.h"
#include "storage/http/recording_transport.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_azure {
namespace {

using azure_test::AzureError;
using azure_test::ExpectSigned;
using azure_test::kBlobBase;
using azure_test::Ok;
using azure_test::Open;
using azure_test::SmallBlocks;
using http::QueryParam;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

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
    if (QueryParam(r.url, "comp") == "blocklist") {
      EXPECT_EQ(list, nullptr) << "one Put Block List";
      list = &r;
      continue;
    }
    if (QueryParam(r.url, "comp") != "block") continue;
    EXPECT_EQ(list, nullptr) << "no Put Block after the list";
    EXPECT_THAT(r.url, StartsWith(std::string(kBlobBase) + "big.bin?comp=block&blockid="));
    const std::string id = QueryParam(r.url, "blockid");
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
    if (QueryParam(r.url, "comp") == "block" && r.body == "efgh" && block_two_attempts++ == 0) {
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
  for (const auto& r : transport->requests()) EXPECT_NE(QueryParam(r.url, "comp"), "blocklist");
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

  void Submit(http::Request request, http::BodySink sink, http::Completion done) override
      EXCLUDES(mu_) {
    MutexLock lock(mu_);
    pending_.push_back({std::move(request), std::move(sink), std::move(done)});
    max_in_flight_ = std::max(max_in_flight_, pending_.size());
    cv_.notify_all();
  }

  size_t max_in_flight() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return max_in_flight_;
  }
  std::vector<http::RecordedRequest> requests() const { return recorder_->requests(); }

 private:
  struct Pending {
    http::Request request;
    http::BodySink sink;
    http::Completion done;
  };

  void Loop(std::stop_token stop) EXCLUDES(mu_) {
    while (!stop.stop_requested()) {
      std::vector<Pending> batch;
      {
        MutexLock lock(mu_);
        // Let a few arrive, then finish them newest first.
        cv_.wait_for(lock, stop, std::chrono::milliseconds(5),
                     [&]() REQUIRES(mu_) { return pending_.size() >= 3; });
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
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Pending> pending_ GUARDED_BY(mu_);
  size_t max_in_flight_ GUARDED_BY(mu_) = 0;
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
}  // namespace
}  // namespace ferry::internal_azure
