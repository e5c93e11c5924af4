// The cluster cache on loopback: a PeerServer over a cache folder, read by a PeerFetchStore
// (src/storage/peer_store.h) whose remote is a folder of the same files.
#include "cache/peer_server.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "base/temp_dir_testutil.h"
#include "cache/cache_layout.h"
#include "cache/download_progress.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "storage/forwarding_store_testutil.h"
#include "storage/http/transport.h"
#include "storage/peer_store.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr char kToken[] = "peer-token-0123456789";
constexpr size_t kShards = 24;
constexpr size_t kShardBytes = 300'000;

std::string Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

void WriteFile(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint64_t Counter(const std::string& name) { return metrics::GetCounter(name).value(); }

// The remote, recording which keys and ranges were read from it.
class RecordingStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    {
      std::lock_guard lock(mu);
      reads.push_back({std::string(key), range.offset});
    }
    return inner().Read(key, range, sink);
  }
  size_t ReadsOf(const std::string& name) {
    std::lock_guard lock(mu);
    return std::count_if(reads.begin(), reads.end(),
                         [&](const auto& r) { return r.first.ends_with("/" + name); });
  }
  std::mutex mu;
  std::vector<std::pair<std::string, uint64_t>> reads;
};

class PeerServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto index = std::make_shared<DatasetDescription>();
    for (size_t k = 0; k < kShards; ++k) {
      ShardDescription shard;
      shard.config = std::make_shared<ShardConfig>();
      shard.raw_data = {.basename = fmt::format("shard.{:05}.mds", k), .bytes = kShardBytes};
      shard.samples = 1;
      contents_.push_back(Bytes(kShardBytes, static_cast<uint32_t>(k)));
      WriteFile(tmp_ / "remote" / shard.raw_data.basename, contents_.back());
      index->shards.push_back(std::move(shard));
    }
    index_ = index;
    auto opened = OpenUrl((tmp_ / "remote").string() + "/");
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    remote_ = std::make_shared<RecordingStore>(opened->store);
    prefix_ = opened->key;
  }

  std::unique_ptr<PeerServer> StartServer() {
    auto server = PeerServer::Start({.token = kToken});
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    return std::move(*server);
  }

  std::string Name(size_t k) const { return index_->shards[k].raw_data.basename; }

  // A store for the node "self" among `peers` (the first is self, never contacted).
  std::shared_ptr<ObjectStore> Client(const std::vector<std::string>& peers) {
    auto store = MakePeerFetchStore(remote_, prefix_,
                                    {.peers = peers,
                                     .self = peers.front(),
                                     .token = kToken,
                                     .dataset = "d1",
                                     .demotion = {.demote_for = std::chrono::seconds(60)}});
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return *store;
  }

  // A shard owned by peer `owner` of `peers`.
  size_t OwnedBy(const std::vector<std::string>& peers, size_t owner, size_t skip = 0) const {
    for (size_t k = 0; k < kShards; ++k) {
      if (RendezvousOrder(peers, Name(k)).front() == owner && skip-- == 0) return k;
    }
    ADD_FAILURE() << "no shard owned by peer " << owner;
    return 0;
  }

  static http::Response Get(const std::string& url, const std::string& authorization,
                            const std::string& range = "") {
    http::Request request;
    request.url = url;
    if (!authorization.empty()) request.headers.Set("Authorization", authorization);
    if (!range.empty()) request.headers.Set("Range", range);
    auto response = http::DefaultTransport()->Execute(std::move(request));
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? *response : http::Response{};
  }

  testing::TempDir tmp_;
  std::shared_ptr<const DatasetDescription> index_;
  std::vector<std::string> contents_;
  std::shared_ptr<RecordingStore> remote_;
  std::string prefix_;  // the remote folder's key in its store
};

TEST(RendezvousOrderTest, IsTheSameOnEveryNodeAndSpreadsShards) {
  const std::vector<std::string> peers = {"n0:7791", "n1:7791", "n2:7791", "n3:7791"};
  const std::vector<std::string> shuffled = {"n2:7791", "n0:7791", "n3:7791", "n1:7791"};
  std::map<std::string, int> owned;
  for (int k = 0; k < 4000; ++k) {
    const std::string name = fmt::format("shard.{:05}.mds", k);
    const auto order = RendezvousOrder(peers, name);
    ASSERT_EQ(order.size(), 4u);
    EXPECT_EQ(peers[order[0]], shuffled[RendezvousOrder(shuffled, name)[0]]) << name;
    ++owned[peers[order[0]]];
    // A node that leaves moves only its own shards: the others keep theirs.
    const std::vector<std::string> three = {"n0:7791", "n1:7791", "n3:7791"};
    if (peers[order[0]] != "n2:7791") {
      EXPECT_EQ(three[RendezvousOrder(three, name)[0]], peers[order[0]]) << name;
    } else {
      EXPECT_EQ(three[RendezvousOrder(three, name)[0]], peers[order[1]]) << name;
    }
  }
  for (const auto& [peer, count] : owned) {
    EXPECT_GT(count, 850) << peer;  // 1000 each, evenly
    EXPECT_LT(count, 1150) << peer;
  }
}

TEST(RendezvousOrderTest, TheOwnerIsTheFirstOfTheOrderEvenAmongRepeatedAddresses) {
  const std::vector<std::string> peers = {"n0:7791", "n1:7791", "n0:7791", "n2:7791", "n1:7791"};
  for (int k = 0; k < 2000; ++k) {
    const std::string name = fmt::format("shard.{:05}.mds", k);
    const auto order = RendezvousOrder(peers, name);
    EXPECT_EQ(RendezvousOwner(peers, name), order.front()) << name;
    // A repeated address comes at its first place first.
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      if (peers[order[i]] == peers[order[i + 1]]) {
        EXPECT_LT(order[i], order[i + 1]) << name;
      }
    }
  }
}

TEST(PeerAddressTest, MustBeHostAndPort) {
  EXPECT_TRUE(CheckPeerAddress("node3:7791").ok());
  EXPECT_TRUE(CheckPeerAddress("10.0.0.7:1").ok());
  for (const char* bad :
       {"node3", "node3:", ":7791", "node3:0", "node3:70000", "http://a:1", "a/b:1"}) {
    EXPECT_EQ(CheckPeerAddress(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(PeerServerTest, ServesOnlyIndexedFilesAndOnlyWithTheToken) {
  WriteFile(tmp_ / "b" / Name(3), contents_[3]);
  WriteFile(tmp_ / "b" / "secret.txt", "not for peers");
  auto server = StartServer();
  auto registration = server->Serve("d1", {.root = tmp_ / "b", .index = index_, .fetch = nullptr});
  const std::string base = fmt::format("http://127.0.0.1:{}", server->port());
  const std::string bearer = std::string("Bearer ") + kToken;

  const auto whole = Get(base + PeerPath("d1", Name(3)), bearer);
  EXPECT_EQ(whole.status, 200);
  EXPECT_TRUE(whole.body == contents_[3]);
  const auto part = Get(base + PeerPath("d1", Name(3)), bearer, "bytes=1000-1999");
  EXPECT_EQ(part.status, 206);
  EXPECT_TRUE(part.body == contents_[3].substr(1000, 1000));
  EXPECT_EQ(part.headers.Get("Content-Range").value_or(""),
            fmt::format("bytes 1000-1999/{}", kShardBytes));
  EXPECT_EQ(Get(base + PeerPath("d1", Name(3)), bearer, "bytes=999999999-").status, 416);

  const uint64_t refused = Counter("/ferry/peer/refused");
  EXPECT_EQ(Get(base + PeerPath("d1", Name(3)), "").status, 401);
  EXPECT_EQ(Get(base + PeerPath("d1", Name(3)), "Bearer wrong-token-0123456789a").status, 401);
  EXPECT_EQ(Counter("/ferry/peer/refused"), refused + 2);
  // Only what the index names: no other file, no way out of the folder, no other dataset.
  for (const std::string& path :
       {PeerPath("d1", "secret.txt"), PeerPath("d1", "../b/" + Name(3)),
        std::string("/ferry/v1/d1/%2E%2E/remote/") + Name(3), PeerPath("d1", "index.json"),
        PeerPath("d2", Name(3)), std::string("/etc/passwd")}) {
    const auto refused_path = Get(base + path, bearer);
    EXPECT_EQ(refused_path.status, 404) << path;
    EXPECT_THAT(refused_path.body, ::testing::Not(HasSubstr("not for peers"))) << path;
  }
  // A shard the folder does not hold, with nothing to fetch it: the asker goes to the remote.
  EXPECT_EQ(Get(base + PeerPath("d1", Name(4)), bearer).status, 404);
  registration.reset();
  EXPECT_EQ(Get(base + PeerPath("d1", Name(3)), bearer).status, 404);  // forgotten
}

TEST_F(PeerServerTest, ReadsShardsFromTheirOwnersAndTheRestFromTheRemote) {
  auto server = StartServer();
  for (size_t k = 0; k < kShards; ++k) WriteFile(tmp_ / "b" / Name(k), contents_[k]);
  auto registration = server->Serve("d1", {.root = tmp_ / "b", .index = index_, .fetch = nullptr});
  const std::vector<std::string> peers = {"127.0.0.1:9",
                                          fmt::format("127.0.0.1:{}", server->port())};
  auto client = Client(peers);
  const uint64_t from_peers = Counter("/ferry/peer/bytes_read");
  const size_t theirs = OwnedBy(peers, 1);
  const size_t mine = OwnedBy(peers, 0);
  auto got = client->Get(prefix_ + Name(theirs));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == contents_[theirs]);
  EXPECT_EQ(remote_->ReadsOf(Name(theirs)), 0u);
  EXPECT_EQ(Counter("/ferry/peer/bytes_read"), from_peers + kShardBytes);
  auto ranged = client->GetRange(prefix_ + Name(theirs), 5, 100);
  ASSERT_TRUE(ranged.ok()) << ranged.status().ToString();
  EXPECT_TRUE(*ranged == contents_[theirs].substr(5, 100));
  got = client->Get(prefix_ + Name(mine));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == contents_[mine]);
  EXPECT_EQ(remote_->ReadsOf(Name(mine)), 1u);
}

TEST_F(PeerServerTest, ADeadPeerCostsOneFailoverThenIsPassedOver) {
  auto server = StartServer();
  const std::vector<std::string> peers = {"127.0.0.1:9",
                                          fmt::format("127.0.0.1:{}", server->port())};
  server.reset();  // the node is gone: its port refuses
  auto client = Client(peers);
  const uint64_t failovers = Counter("/ferry/peer/failovers");
  const uint64_t reads = Counter("/ferry/peer/reads");
  for (size_t n = 0; n < 3; ++n) {
    const size_t theirs = OwnedBy(peers, 1, n);
    auto got = client->Get(prefix_ + Name(theirs));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(*got == contents_[theirs]);
    EXPECT_EQ(remote_->ReadsOf(Name(theirs)), 1u);
  }
  EXPECT_EQ(Counter("/ferry/peer/failovers"), failovers + 1);
  EXPECT_EQ(Counter("/ferry/peer/reads"), reads + 1);  // demoted: not asked again
}

// A peer whose download breaks off mid-shard cuts its reply short; the read goes on from the
// remote at the byte it reached.
TEST_F(PeerServerTest, AReplyCutShortGoesOnFromTheRemoteAtTheByteReached) {
  const fs::path root = tmp_ / "b";
  const CacheLayout layout(root);
  ASSERT_TRUE(layout.CreateLocksDir().ok());
  auto server = StartServer();
  const std::vector<std::string> peers = {"127.0.0.1:9",
                                          fmt::format("127.0.0.1:{}", server->port())};
  // A shard the server's node owns: ownership goes by address, whatever the list's order.
  const size_t k = OwnedBy(peers, 1);
  const int tmp_fd =
      ::open(layout.TemporaryPath(Name(k)).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(tmp_fd, 0);
  auto writer = DownloadProgressWriter::Create(layout.ProgressPath(Name(k)), tmp_fd, kShardBytes,
                                               {{0, kShardBytes}});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  constexpr uint64_t kLanded = 100'000;
  ASSERT_EQ(::pwrite(tmp_fd, contents_[k].data(), kLanded, 0), static_cast<ssize_t>(kLanded));
  (*writer)->Landed(0, kLanded);

  auto registration = server->Serve("d1", {.root = root, .index = index_, .fetch = nullptr});
  auto store = MakePeerFetchStore(
      remote_, prefix_, {.peers = peers, .self = "127.0.0.1:9", .token = kToken, .dataset = "d1"});
  ASSERT_TRUE(store.ok());
  // The owner's download fails once the server has sent what landed (not after a fixed time:
  // on a loaded machine the request may come later).
  const uint64_t served = Counter("/ferry/peer/served_bytes");
  std::thread fail([&] {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Counter("/ferry/peer/served_bytes") < served + kLanded && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    (*writer)->Finish(false);
  });
  auto got = (*store)->Get(prefix_ + Name(k));
  fail.join();
  ::close(tmp_fd);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == contents_[k]);
  ASSERT_EQ(remote_->ReadsOf(Name(k)), 1u);
  EXPECT_EQ(remote_->reads.back().second, kLanded);  // only the rest
}

// A shard the owner does not hold is fetched once, by the owner, and streamed to the asker as
// it lands: the first bytes arrive before the download ends.
TEST_F(PeerServerTest, TheOwnerFetchesOnDemandAndStreamsAsItLands) {
  const fs::path root = tmp_ / "b";
  const CacheLayout layout(root);
  ASSERT_TRUE(layout.CreateLocksDir().ok());
  std::atomic<int> fetches{0};
  std::atomic<int64_t> all_landed_ns{0};
  std::atomic<int64_t> first_byte_ns{0};
  const auto start = Clock::now();
  auto fetch = [&](size_t k, std::stop_token) -> Status {
    ++fetches;
    const fs::path tmp = layout.TemporaryPath(Name(k));
    const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    auto writer = DownloadProgressWriter::Create(layout.ProgressPath(Name(k)), fd, kShardBytes,
                                                 {{0, kShardBytes}});
    if (!writer.ok()) return writer.status();
    for (uint64_t at = 0; at < kShardBytes; at += 30'000) {
      const uint64_t n = std::min<uint64_t>(30'000, kShardBytes - at);
      if (::pwrite(fd, contents_[k].data() + at, n, static_cast<off_t>(at)) !=
          static_cast<ssize_t>(n)) {
        return InternalError("pwrite");
      }
      if (at + n == kShardBytes) all_landed_ns = (Clock::now() - start).count();
      (*writer)->Landed(0, at + n);
      if (at == 0) {
        // The rest lands once the asker has its first bytes - or after 20 s, too late for the
        // test, if they waited for the whole download.
        const auto deadline = Clock::now() + std::chrono::seconds(20);
        while (first_byte_ns.load() == 0 && Clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
    }
    fs::rename(tmp, layout.FilePath(Name(k)));
    (*writer)->Finish(true);
    ::close(fd);
    return Status::Ok();
  };
  auto server = StartServer();
  auto registration = server->Serve("d1", {.root = root, .index = index_, .fetch = fetch});
  const std::vector<std::string> peers = {"127.0.0.1:9",
                                          fmt::format("127.0.0.1:{}", server->port())};
  auto client = Client(peers);
  const size_t theirs = OwnedBy(peers, 1);
  std::string got;
  auto info = client->Read(prefix_ + Name(theirs), {}, [&](std::string_view chunk) {
    if (got.empty()) first_byte_ns = (Clock::now() - start).count();
    got += chunk;
    return Status::Ok();
  });
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(got == contents_[theirs]);
  EXPECT_EQ(fetches.load(), 1);
  EXPECT_EQ(remote_->ReadsOf(Name(theirs)), 0u);
  EXPECT_GT(all_landed_ns.load(), 0);
  EXPECT_GT(first_byte_ns.load(), 0);
  EXPECT_LT(first_byte_ns.load(), all_landed_ns.load());
  // Next time it is a file in the folder: no fetch.
  auto again = client->Get(prefix_ + Name(theirs));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again == contents_[theirs]);
  EXPECT_EQ(fetches.load(), 1);
}

TEST_F(PeerServerTest, FindsTheDatasetsOfACacheFolder) {
  WriteFile(tmp_ / "cache" / "train" / "index.json", R"({"version": 2, "shards": []})");
  WriteFile(tmp_ / "cache" / "val" / "split" / "index.json", R"({"version": 2, "shards": []})");
  WriteFile(tmp_ / "cache" / "junk" / "file.txt", "x");
  auto found = FindPeerDatasets(tmp_ / "cache");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  std::vector<std::string> roots;
  for (const auto& [id, dataset] : *found) {
    roots.push_back(dataset.root.lexically_relative(tmp_ / "cache").string());
    EXPECT_EQ(id, PeerDatasetId(R"({"version": 2, "shards": []})"));
    EXPECT_FALSE(dataset.fetch);
  }
  std::sort(roots.begin(), roots.end());
  EXPECT_EQ(roots, (std::vector<std::string>{"train", "val/split"}));
}

}  // namespace
}  // namespace ferry::internal_cache
