// Samples served from a shard while it downloads: a remote whose shard downloads stop at a byte
// the test chooses (the gate) until it opens them, in this process or in another one.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "base/little_endian.h"
#include "base/temp_dir_testutil.h"
#include "cache/cache_testutil.h"
#include "ferry/format/mds_writer.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "ferry/stream/streaming_dataset.h"
#include "storage/forwarding_store_testutil.h"
#include "stream/stream_testutil.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing::SampleId;

constexpr uint64_t kShardSamples = 400;
constexpr uint64_t kSampleBlob = 1000;
constexpr uint64_t kGateAt = 100'000;  // bytes of the shard that land before the gate

// Downloads (reads of more than 64 KiB, or to the end) of "heldfile:///abs/path" stop before
// byte kGateAt while the gate is closed; the small ranged reads of a first sample pass.
struct Gate {
  std::mutex mu;
  std::condition_variable opened;
  bool closed = false;
  std::atomic<int> held{0};  // downloads waiting at the gate
};
Gate gate;

void CloseGate() {
  std::lock_guard lock(gate.mu);
  gate.closed = true;
}

void OpenGate() {
  {
    std::lock_guard lock(gate.mu);
    gate.closed = false;
  }
  gate.opened.notify_all();
}

class HeldStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    if (range.length && *range.length <= (64u << 10)) return inner().Read(key, range, sink);
    uint64_t at = range.offset;
    return inner().Read(key, range, [&](std::string_view chunk) -> Status {
      while (!chunk.empty()) {
        const bool before = at < kGateAt;
        const size_t take = before ? std::min<uint64_t>(chunk.size(), kGateAt - at) : chunk.size();
        FERRY_RETURN_IF_ERROR(sink(chunk.substr(0, take)));
        chunk.remove_prefix(take);
        at += take;
        if (at == kGateAt && before) {
          std::unique_lock lock(gate.mu);
          ++gate.held;
          const bool open =
              gate.opened.wait_for(lock, std::chrono::seconds(60), [] { return !gate.closed; });
          --gate.held;
          if (!open) return DeadlineExceededError("the test never opened the gate");
        }
      }
      return Status::Ok();
    });
  }
};

Result<StoreAndKey> OpenHeldStore(std::string_view url) {
  return testing::OpenWrapped<HeldStore>(url, "held");
}
const StoreRegistration kHeldStore("heldfile", &OpenHeldStore);

int64_t Metric(const char* name) { return metrics::Values()[name]; }

class LandedReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = MdsWriter::Create({.out = tmp_ / "remote",
                                     .columns = {{"id", "int"}, {"blob", "bytes"}},
                                     .hashes = {"xxh64"},
                                     .size_limit = uint64_t{1} << 26})
                      .value();
    for (uint64_t i = 0; i < kShardSamples; ++i) {
      const std::string b(kSampleBlob, static_cast<char>('a' + i % 26));
      const Value values[] = {Value(Bytes{b}), Value(static_cast<int64_t>(i))};
      ASSERT_TRUE(writer->WriteValues(values).ok());
    }
    ASSERT_TRUE(writer->Finish().has_value());
    // The samples whose records lie wholly before the gate.
    std::ifstream shard(tmp_ / "remote" / "shard.00000.mds", std::ios::binary);
    std::string head(4 + 4 * (kShardSamples + 1), '\0');
    ASSERT_TRUE(shard.read(head.data(), static_cast<std::streamsize>(head.size())));
    while (landed_ < kShardSamples && LoadU32LE(head.data() + 4 + 4 * (landed_ + 1)) <= kGateAt) {
      ++landed_;
    }
    ASSERT_GT(landed_, 50u);
    ASSERT_LT(landed_, kShardSamples);
  }

  std::unique_ptr<SampleIterator> Iterate(bool shuffle = false, uint32_t batch_size = 1) {
    StreamingOptions o;
    o.streams = {
        {.remote = "heldfile://" + (tmp_ / "remote").string(), .local = (tmp_ / "cache").string()}};
    o.order.shuffle = shuffle;
    o.order.batch_size = batch_size;
    auto ds = StreamingDataset::Open(o);
    EXPECT_TRUE(ds.has_value()) << ds.status().ToString();
    if (!ds) return nullptr;
    dataset_ = *ds;
    auto it = dataset_->Iterate({.world = WorldShape{1, 1, 1}});
    EXPECT_TRUE(it.has_value()) << it.status().ToString();
    return it ? std::move(*it) : nullptr;
  }

  // Reads the next sample, checking that it is sample `want` (its bytes, not only its id).
  static void ExpectNext(SampleIterator& it, uint64_t want) {
    auto s = it.Next();
    ASSERT_TRUE(s.has_value()) << s.status().ToString();
    ASSERT_TRUE(s->has_value());
    EXPECT_EQ((*s)->id, want);
    EXPECT_EQ(SampleId(**s), static_cast<int64_t>(want));
    EXPECT_EQ((*s)->fields[0], std::string(kSampleBlob, static_cast<char>('a' + want % 26)));
  }

  // Waits up to 20 s for a download to be waiting at the gate.
  static bool WaitHeld() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (gate.held.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(2));
    }
    return gate.held.load() == 1;
  }

  bool ShardIsLocal() const { return fs::exists(tmp_ / "cache" / "shard.00000.mds"); }

  ferry::testing::TempDir tmp_;
  uint64_t landed_ = 0;
  std::shared_ptr<StreamingDataset> dataset_;
};

TEST_F(LandedReadTest, SamplesThatLandedAreServedWhileTheShardStillDownloads) {
  CloseGate();
  auto it = Iterate();
  ASSERT_NE(it, nullptr);
  const int64_t landed_reads = Metric("/ferry/stream/landed_reads");
  for (uint64_t i = 0; i < landed_; ++i) ExpectNext(*it, i);
  // All of them while the download waits at the gate: the shard is not in the cache folder.
  EXPECT_TRUE(WaitHeld());
  EXPECT_FALSE(ShardIsLocal());
  // The first came by ranged GETs (a cold start) or from the landed bytes, whichever was first;
  // the others from the landed bytes.
  EXPECT_GE(Metric("/ferry/stream/landed_reads") - landed_reads, static_cast<int64_t>(landed_) - 1);
  // The next one's bytes have not landed: not served (the wait of a Python iterator ends
  // unserved), and still not once the download is let go on.
  EXPECT_FALSE(it->AwaitNext(milliseconds(50)));
  OpenGate();
  EXPECT_TRUE(it->AwaitNext(milliseconds(10'000)));
  for (uint64_t i = landed_; i < kShardSamples; ++i) ExpectNext(*it, i);
  auto end = it->Next();
  ASSERT_TRUE(end.has_value());
  EXPECT_FALSE(end->has_value());
  EXPECT_TRUE(ShardIsLocal());
}

// Another process downloads the shard and is killed mid-way while this one serves the bytes it
// landed: they are read from its download, and the rest comes from this process's own download
// after the kill - every sample once, with its own bytes.
TEST_F(LandedReadTest, AKilledDownloadingProcessCostsARefetchNeverWrongBytes) {
  testing::Children children;
  testing::Pipe started;
  const pid_t child = children.Spawn([&] {
    CloseGate();  // in the child only: its download stops at the gate
    auto it = Iterate();
    if (!it) return 1;
    started.Send();
    for (;;) {  // until killed: it blocks on the first sample past the gate
      auto s = it->Next();
      if (!s || !*s) return 2;
    }
  });
  ASSERT_TRUE(started.Receive());
  // Wait for the child's download to have reached the gate: its record is there.
  const fs::path locks = tmp_ / "cache" / ".ferry" / "locks";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    bool found = false;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(locks, ec)) {
      found |= e.path().extension() == ".progress";
    }
    if (found || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(milliseconds(5));
  }
  auto it = Iterate();  // the gate is open in this process
  ASSERT_NE(it, nullptr);
  const int64_t landed_reads = Metric("/ferry/stream/landed_reads");
  for (uint64_t i = 0; i < landed_; ++i) ExpectNext(*it, i);
  // Served from the child's download: this process waits for its download lock meanwhile.
  EXPECT_GE(Metric("/ferry/stream/landed_reads") - landed_reads, static_cast<int64_t>(landed_) - 1);
  EXPECT_FALSE(ShardIsLocal());
  EXPECT_FALSE(it->AwaitNext(milliseconds(50)));
  // Killed while this process waits for bytes it never lands.
  std::jthread killer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    children.Kill(child);
  });
  for (uint64_t i = landed_; i < kShardSamples; ++i) ExpectNext(*it, i);
  auto end = it->Next();
  ASSERT_TRUE(end.has_value());
  EXPECT_FALSE(end->has_value());
  EXPECT_TRUE(ShardIsLocal());
}

// A cold start reads its first batch by range, all at once: a shuffled batch's samples lie all
// over the shard, most of them past the bytes its download has landed.
TEST_F(LandedReadTest, TheFirstShuffledBatchIsReadByRangeWhileItsShardDownloads) {
  CloseGate();
  constexpr uint32_t kBatch = 48;
  auto it = Iterate(/*shuffle=*/true, kBatch);
  ASSERT_NE(it, nullptr);
  const int64_t direct_reads = Metric("/ferry/stream/direct_reads");
  std::set<int64_t> seen;
  uint64_t past_gate = 0;
  for (uint32_t i = 0; i < kBatch; ++i) {
    auto s = it->Next();
    ASSERT_TRUE(s.has_value() && s->has_value()) << s.status().ToString();
    const uint64_t id = (*s)->id;
    EXPECT_EQ(SampleId(**s), static_cast<int64_t>(id));
    EXPECT_EQ((*s)->fields[0], std::string(kSampleBlob, static_cast<char>('a' + id % 26)));
    seen.insert(static_cast<int64_t>(id));
    past_gate += id >= landed_;
  }
  EXPECT_GT(past_gate, kBatch / 2) << "most of a shuffled batch lies past the landed bytes";
  EXPECT_TRUE(WaitHeld());
  EXPECT_FALSE(ShardIsLocal());
  EXPECT_EQ(Metric("/ferry/stream/direct_reads") - direct_reads, kBatch);
  OpenGate();
  for (;;) {
    auto s = it->Next();
    ASSERT_TRUE(s.has_value()) << s.status().ToString();
    if (!s->has_value()) break;
    EXPECT_TRUE(seen.insert(static_cast<int64_t>((*s)->id)).second) << (*s)->id;
  }
  EXPECT_EQ(seen.size(), kShardSamples);
}

// validate_hash needs the whole shard first: nothing is read from a download in progress.
TEST_F(LandedReadTest, ValidateHashWaitsForTheWholeShard) {
  StreamingOptions o;
  o.streams = {
      {.remote = "heldfile://" + (tmp_ / "remote").string(), .local = (tmp_ / "cache").string()}};
  o.validate_hash = "xxh64";
  auto ds = StreamingDataset::Open(o);
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  CloseGate();
  auto it = (*ds)->Iterate({.world = WorldShape{1, 1, 1}});
  ASSERT_TRUE(it.has_value());
  ASSERT_TRUE(WaitHeld());
  const fs::path locks = tmp_ / "cache" / ".ferry" / "locks";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(locks, ec)) {
    EXPECT_NE(e.path().extension(), ".progress") << e.path();
  }
  OpenGate();
  for (uint64_t i = 0; i < kShardSamples; ++i) ExpectNext(**it, i);
}

}  // namespace
}  // namespace ferry
