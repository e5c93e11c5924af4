// StreamingDataset end to end on local folders: a "remote" dataset in one folder (a FileStore,
// wrapped like any remote) streamed through a cache in another, and datasets read in place.
#include "ferry/stream/streaming_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/in_flight_counter_testutil.h"
#include "base/temp_dir_testutil.h"
#include "cache/eviction.h"
#include "ferry/format/local_dataset.h"
#include "ferry/format/mds_writer.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "storage/forwarding_store_testutil.h"
#include "stream/stream_testutil.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

// A dataset of `n` samples {id: int, blob: bytes} in shards of about `per_shard` samples.
void WriteDataset(const std::filesystem::path& out, uint64_t n, uint64_t per_shard,
                  std::optional<std::string> compression = std::nullopt) {
  // Records are 4 + 8 + blob bytes + 4 offset: size_limit picks the samples per shard.
  const uint64_t blob = 100;
  auto writer = MdsWriter::Create({.out = out,
                                   .columns = {{"id", "int"}, {"blob", "bytes"}},
                                   .compression = compression,
                                   .hashes = {"xxh64"},
                                   .size_limit = 300 + per_shard * (blob + 16)})
                    .value();
  for (uint64_t i = 0; i < n; ++i) {
    std::string b(blob, static_cast<char>('a' + i % 26));
    b += std::to_string(i);
    const Value values[] = {Value(Bytes{b}), Value(static_cast<int64_t>(i))};
    ASSERT_TRUE(writer->WriteValues(values).ok());
  }
  ASSERT_TRUE(writer->Finish().has_value());
}

using testing::SampleId;

std::vector<int64_t> ReadAll(SampleIterator& it) {
  std::vector<int64_t> ids;
  for (;;) {
    auto s = it.Next();
    EXPECT_TRUE(s.has_value()) << s.status().ToString();
    if (!s || !*s) break;
    EXPECT_EQ(SampleId(**s), static_cast<int64_t>((*s)->id));  // the bytes are the right sample
    ids.push_back(SampleId(**s));
  }
  return ids;
}

using testing::FileRequests;

// A local folder behind a slow link: whole-object reads (shard downloads) take 300 ms, ranged
// reads are immediate. "slowfile:///abs/path". Counts the downloads in progress at once.
class SlowStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    if (range.offset == 0 && !range.length) {
      ++started;
      downloads.Enter();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      downloads.Leave();
    }
    return inner().Read(key, range, sink);
  }
  static inline std::atomic<int> started{0};
  static inline testing::InFlightCounter downloads;
};

Result<StoreAndKey> OpenSlowStore(std::string_view url) {
  return testing::OpenWrapped<SlowStore>(url, "slow");
}
const StoreRegistration kSlowStore("slowfile", &OpenSlowStore);

// Reads and HEADs of an index.json take 100 ms, counted while they last: whether a dataset's
// streams load their indexes one after another or together.
class SlowIndexStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    Slow(key);
    return inner().Read(key, range, sink);
  }
  Result<ObjectInfo> Head(std::string_view key) override {
    Slow(key);
    return inner().Head(key);
  }
  static inline testing::InFlightCounter loads;

 private:
  static void Slow(std::string_view key) {
    if (!key.ends_with("index.json")) return;
    loads.Enter();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    loads.Leave();
  }
};

Result<StoreAndKey> OpenSlowIndexStore(std::string_view url) {
  return testing::OpenWrapped<SlowIndexStore>(url, "slowindex");
}
const StoreRegistration kSlowIndexStore("slowindexfile", &OpenSlowIndexStore);

class StreamingDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteDataset(tmp_ / "remote", 1000, 37); }
  StreamingOptions Remote() {
    StreamingOptions o;
    o.streams = {{.remote = (tmp_ / "remote").string(), .local = (tmp_ / "cache").string()}};
    return o;
  }
  testing::TempDir tmp_;
};

TEST_F(StreamingDatasetTest, EveryWorkerTogetherReadsEverySampleOnce) {
  for (bool shuffle : {false, true}) {
    StreamingOptions o = Remote();
    o.order.shuffle = shuffle;
    o.order.num_canonical_nodes = 2;
    auto ds = StreamingDataset::Open(o);
    ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
    EXPECT_EQ((*ds)->num_samples(), 1000u);
    const WorldShape world{2, 2, 3};
    std::map<int64_t, int> seen;
    for (uint32_t node = 0; node < 2; ++node) {
      for (uint32_t rank = 0; rank < 2; ++rank) {
        for (uint32_t worker = 0; worker < 3; ++worker) {
          auto it = (*ds)->Iterate({.world = world, .worker = {node, rank, worker}, .epoch = 0});
          ASSERT_TRUE(it.has_value()) << it.status().ToString();
          for (int64_t id : ReadAll(**it)) ++seen[id];
        }
      }
    }
    ASSERT_EQ(seen.size(), 1000u);  // every sample ...
    int extra = 0;
    for (const auto& [id, count] : seen) extra += count - 1;
    auto plan = (*ds)->Plan(world, 0);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(1000 + extra, static_cast<int>((*plan)->epoch_samples()));  // ... plus the padding
    EXPECT_LT(extra, 12);
  }
}

// A stream read from mirrors: the first lacks half the shards (a copy still being staged), so
// the second serves those; a mirror whose index.json differs is an error naming both, and one
// that is the cache folder itself is refused.
TEST_F(StreamingDatasetTest, AStreamReadsFromItsMirrors) {
  namespace fs = std::filesystem;
  const fs::path staged = tmp_ / "staged";
  fs::create_directories(staged);
  size_t copied = 0;
  for (const auto& entry : fs::directory_iterator(tmp_ / "remote")) {
    const std::string name = entry.path().filename().string();
    if (name == "index.json" || (name.starts_with("shard.") && ++copied % 2 == 0)) {
      fs::copy_file(entry.path(), staged / name);
    }
  }
  StreamingOptions o;
  o.streams = {{.remote = staged.string(),
                .mirrors = {(tmp_ / "remote").string()},
                .local = (tmp_ / "cache").string()}};
  const uint64_t missing = metrics::GetCounter("/ferry/mirror/0/missing").value();
  const uint64_t first = metrics::GetCounter("/ferry/mirror/0/bytes_read").value();
  const uint64_t second = metrics::GetCounter("/ferry/mirror/1/bytes_read").value();
  auto ds = StreamingDataset::Open(o);
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  auto it = (*ds)->Iterate({.epoch = 0}).value();
  std::vector<int64_t> ids = ReadAll(*it);
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(ids.size(), 1000u);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(ids[static_cast<size_t>(i)], i);
  EXPECT_GT(metrics::GetCounter("/ferry/mirror/0/missing").value() - missing, 0u);
  EXPECT_GT(metrics::GetCounter("/ferry/mirror/0/bytes_read").value() - first, 0u);
  EXPECT_GT(metrics::GetCounter("/ferry/mirror/1/bytes_read").value() - second, 0u);

  ASSERT_TRUE(WriteFileAtomically(staged / "index.json", "{\"version\": 2, \"shards\": []}").ok());
  o.streams[0].local = (tmp_ / "cache2").string();
  auto differs = StreamingDataset::Open(o);
  ASSERT_FALSE(differs.has_value());
  EXPECT_EQ(differs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(differs.status().message(), ::testing::HasSubstr("mirrors must hold one dataset"));

  o.streams[0] = {.remote = (tmp_ / "remote").string(),
                  .mirrors = {(tmp_ / "cache").string()},
                  .local = (tmp_ / "cache").string()};
  auto itself = StreamingDataset::Open(o);
  ASSERT_FALSE(itself.has_value());
  EXPECT_EQ(itself.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(StreamingDatasetTest, SecondEpochMakesNoRemoteRequests) {
  auto ds = StreamingDataset::Open(Remote()).value();
  const int64_t before = FileRequests();
  auto it = ds->Iterate({.epoch = 0}).value();
  EXPECT_EQ(ReadAll(*it).size(), 1000u);
  it.reset();
  const int64_t after_first = FileRequests();
  EXPECT_GT(after_first, before);
  auto again = ds->Iterate({.epoch = 1}).value();
  EXPECT_EQ(ReadAll(*again).size(), 1000u);
  EXPECT_EQ(FileRequests(), after_first) << "epoch 2 must be served by the cache";
  // A new dataset object on the same cache folder (a new job) asks the remote once, whether its
  // index.json changed (a HEAD), and fetches nothing; offline, not even that.
  auto ds2 = StreamingDataset::Open(Remote()).value();
  auto third = ds2->Iterate({.epoch = 2}).value();
  EXPECT_EQ(ReadAll(*third).size(), 1000u);
  EXPECT_EQ(FileRequests(), after_first + 1);
  StreamingOptions offline = Remote();
  offline.offline = true;
  auto ds3 = StreamingDataset::Open(offline).value();
  EXPECT_EQ(ReadAll(*ds3->Iterate({.epoch = 3}).value()).size(), 1000u);
  EXPECT_EQ(FileRequests(), after_first + 1);
}

TEST_F(StreamingDatasetTest, OnlyTheFirstSampleIsReadByRangeWhileShardsDownload) {
  StreamingOptions o = Remote();
  o.streams[0].remote = "slowfile://" + (tmp_ / "remote").string();  // file:///tmp/...
  o.download_concurrency = 8;
  auto ds = StreamingDataset::Open(o).value();
  auto direct = [] { return metrics::Values()["/ferry/stream/direct_reads"]; };
  const int64_t before = direct();
  auto it = ds->Iterate({.epoch = 0}).value();
  auto first = it->Next();
  ASSERT_TRUE(first.has_value() && *first) << first.status().ToString();
  EXPECT_EQ(SampleId(**first), 0);
  EXPECT_EQ(direct() - before, 1) << "the first sample comes before its 300 ms download";
  // The rest of the first shard waits for the shard instead of paying a request per sample.
  EXPECT_EQ(ReadAll(*it).size(), 999u);
  EXPECT_EQ(direct() - before, 1);
}

// In a shuffled order nearly every sample is in another shard: the auto look-ahead reaches as
// many shards as may be downloaded at once, rather than as many samples as the waiting worker
// consumes in a fetch's time.
TEST_F(StreamingDatasetTest, AShuffledOrderKeepsEveryDownloadSlotBusy) {
  StreamingOptions o = Remote();
  o.streams[0].remote = "slowfile://" + (tmp_ / "remote").string();
  o.order.shuffle = true;
  o.download_concurrency = 16;
  auto ds = StreamingDataset::Open(o).value();
  ASSERT_GT(ds->indexes()[0]->shards.size(), 16u);
  SlowStore::downloads.most = 0;
  auto it = ds->Iterate({.epoch = 0}).value();
  EXPECT_EQ(ReadAll(*it).size(), 1000u);
  EXPECT_EQ(SlowStore::downloads.most.load(), 16);
}

// With every setting at its default, a shuffled cold start fetches two shards while its first
// batch is read by range, then every shard the next four shards' worth of samples touch (at
// most 16) - long before a download has ended (300 ms each here) and taught it anything. Also
// for a resumed worker.
TEST_F(StreamingDatasetTest, AShuffledColdStartWidensOnceTheFirstBatchIsRead) {
  for (const uint64_t skip : {uint64_t{0}, uint64_t{400}}) {
    SCOPED_TRACE(skip);
    StreamingOptions o = Remote();
    o.streams[0].remote = "slowfile://" + (tmp_ / "remote").string();
    o.streams[0].local = (tmp_ / ("cache" + std::to_string(skip))).string();
    o.order.shuffle = true;
    o.order.batch_size = 5;
    auto ds = StreamingDataset::Open(o).value();
    ASSERT_GT(ds->indexes()[0]->shards.size(), 16u);
    SlowStore::started = 0;
    SlowStore::downloads.most = 0;
    auto it = ds->Iterate({.epoch = 0, .skip = skip}).value();
    for (int i = 0; i < 4; ++i) {
      auto sample = it->Next();
      ASSERT_TRUE(sample.has_value() && *sample) << sample.status().ToString();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_LE(SlowStore::downloads.most.load(), 2) << "while the first batch is read";
    auto fifth = it->Next();
    ASSERT_TRUE(fifth.has_value() && *fifth) << fifth.status().ToString();
    // The bodies of the widened start: all sixteen at once, before the first two end.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (SlowStore::downloads.most.load() < 16 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(SlowStore::downloads.most.load(), 16) << "after it";
    EXPECT_EQ(ReadAll(*it).size(), 995u - skip);
  }
}

// A dataset of many streams loads their indexes together (each a round trip or two), and the
// first stream's error in stream order is the one reported.
TEST_F(StreamingDatasetTest, ManyStreamsLoadTheirIndexesTogether) {
  StreamingOptions o;
  for (int s = 0; s < 12; ++s) {
    const fs::path remote = tmp_ / "streams" / fmt::format("s{}", s);
    WriteDataset(remote, 20 + s, 37);
    o.streams.push_back({.remote = "slowindexfile://" + remote.string(),
                         .local = (tmp_ / "caches" / fmt::format("s{}", s)).string()});
  }
  SlowIndexStore::loads.most = 0;
  auto ds = StreamingDataset::Open(o);
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  EXPECT_EQ((*ds)->num_samples(), 12u * 20 + 66);
  EXPECT_GE(SlowIndexStore::loads.most.load(), 4) << "the index loads overlap";

  // Streams 3 and 7 have no dataset: stream 3 is named, whichever failed first.
  for (const int gone : {3, 7}) fs::remove_all(tmp_ / "streams" / fmt::format("s{}", gone));
  for (auto& stream : o.streams) stream.local += "-again";
  auto failed = StreamingDataset::Open(o);
  ASSERT_FALSE(failed.has_value());
  EXPECT_NE(failed.status().message().find("/s3"), std::string::npos) << failed.status().ToString();
  EXPECT_EQ(failed.status().message().find("/s7"), std::string::npos) << failed.status().ToString();
}

// AwaitNext lets a caller wait for the next sample's download in slices (Python checks for
// Ctrl+C between them): false while the shard is on its way, true once Next will not wait.
TEST_F(StreamingDatasetTest, AwaitNextWaitsForTheNextSamplesDownloadInSlices) {
  StreamingOptions o = Remote();
  o.streams[0].remote = "slowfile://" + (tmp_ / "remote").string();  // 300 ms a shard
  auto ds = StreamingDataset::Open(o).value();
  auto it = ds->Iterate({.epoch = 0}).value();
  EXPECT_TRUE(it->AwaitNext(std::chrono::milliseconds(0)));  // the first is read by range
  auto first = it->Next();
  ASSERT_TRUE(first.has_value() && first->has_value()) << first.status().ToString();
  EXPECT_FALSE(it->AwaitNext(std::chrono::milliseconds(10)));
  EXPECT_TRUE(it->AwaitNext(std::chrono::seconds(30)));
  uint64_t read = 1;
  // Now the shard is local: the samples in it are not waited for.
  while (it->AwaitNext(std::chrono::milliseconds(0))) {
    auto next = it->Next();
    ASSERT_TRUE(next.has_value()) << next.status().ToString();
    if (!next->has_value()) break;
    ++read;
  }
  EXPECT_GT(read, 1u);
  EXPECT_EQ(read + ReadAll(*it).size(), 1000u);
}

// Without a cache_limit only the shards in flight count against max_bytes_in_flight (fetched
// ones stay in the cache anyway), and they stay within it - give or take the one shard the
// worker is waiting for, which is fetched whatever the budget says.
TEST_F(StreamingDatasetTest, TheByteBudgetBoundsTheDownloadsInFlight) {
  StreamingOptions o = Remote();
  o.streams[0].remote = "slowfile://" + (tmp_ / "remote").string();
  o.order.shuffle = true;
  o.download_concurrency = 16;
  uint64_t largest = 0;
  {
    auto probe = StreamingDataset::Open(o).value();
    for (const auto& shard : probe->indexes()[0]->shards) {
      largest = std::max(largest, shard.raw_data.bytes);
    }
  }
  o.max_bytes_in_flight = 3 * largest;
  auto ds = StreamingDataset::Open(o).value();
  SlowStore::downloads.most = 0;
  auto it = ds->Iterate({.epoch = 0}).value();
  EXPECT_EQ(ReadAll(*it).size(), 1000u);
  EXPECT_GE(SlowStore::downloads.most.load(), 3);
  EXPECT_LE(SlowStore::downloads.most.load(), 4);
}

// A cache_limit that holds the whole dataset evicts nothing, so a reader keeps every shard it
// has opened open: in a shuffled epoch 2 each shard is opened once, not once per visit.
TEST_F(StreamingDatasetTest, ACacheThatHoldsTheDatasetKeepsItsShardsOpen) {
  StreamingOptions o = Remote();
  o.order.shuffle = true;
  uint64_t total = 0;
  size_t shards = 0;
  auto probe = StreamingDataset::Open(o).value();
  shards = probe->indexes()[0]->shards.size();
  for (const auto& shard : probe->indexes()[0]->shards) total += shard.raw_data.bytes;
  // A 16th of it would hold two shards; the folder holds index.json (and ferry's records) too,
  // as the plan counts them.
  o.cache_limit = total + total / 20 +
                  internal_cache::PlannedOtherBytes(internal_cache::CacheLayout(tmp_ / "cache"));
  auto ds = StreamingDataset::Open(o).value();
  EXPECT_EQ(ReadAll(*ds->Iterate({.epoch = 0}).value()).size(), 1000u);
  auto opens = [] { return metrics::Values()["/ferry/stream/shard_opens"]; };
  const int64_t before = opens();
  EXPECT_EQ(ReadAll(*ds->Iterate({.epoch = 1}).value()).size(), 1000u);
  EXPECT_LE(opens() - before, static_cast<int64_t>(shards));
}

TEST_F(StreamingDatasetTest, ResumingContinuesTheUninterruptedOrder) {
  StreamingOptions o = Remote();
  o.order.shuffle = true;
  o.order.num_canonical_nodes = 1;
  auto ds = StreamingDataset::Open(o).value();
  const auto all = ReadAll(*ds->Iterate({.epoch = 3}).value());
  ASSERT_EQ(all.size(), 1000u);
  for (uint64_t k :
       {uint64_t{0}, uint64_t{1}, uint64_t{37}, uint64_t{500}, uint64_t{999}, uint64_t{1000}}) {
    auto rest = ReadAll(*ds->Iterate({.epoch = 3, .resume_from = k}).value());
    std::vector<int64_t> want(all.begin() + static_cast<ptrdiff_t>(k), all.end());
    EXPECT_EQ(rest, want) << "resumed at " << k;
  }
}

TEST_F(StreamingDatasetTest, SkippingResumesEachWorkerExactlyWhereItStopped) {
  StreamingOptions o = Remote();
  o.order.shuffle = true;
  o.order.batch_size = 4;
  auto ds = StreamingDataset::Open(o).value();
  const WorldShape world{.nodes = 1, .ranks_per_node = 1, .workers_per_rank = 3};
  for (uint32_t w = 0; w < 3; ++w) {
    const auto all =
        ReadAll(*ds->Iterate({.world = world, .worker = {.worker = w}, .epoch = 1}).value());
    for (uint64_t skip :
         {uint64_t{0}, uint64_t{4}, uint64_t{5}, all.size() - 1, all.size(), all.size() + 7}) {
      auto it =
          ds->Iterate({.world = world, .worker = {.worker = w}, .epoch = 1, .skip = skip}).value();
      EXPECT_EQ(it->remaining(), all.size() - std::min<uint64_t>(skip, all.size()));
      const auto rest = ReadAll(*it);
      std::vector<int64_t> want(
          all.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(skip, all.size())), all.end());
      EXPECT_EQ(rest, want) << "worker " << w << " skipping " << skip;
    }
  }
}

TEST_F(StreamingDatasetTest, ALocalDatasetIsReadInPlaceAndNeverEvicted) {
  WriteDataset(tmp_ / "local", 300, 20, "zstd");
  StreamingOptions o;
  o.streams = {{.local = (tmp_ / "local").string()}};
  // The least Open accepts (four of the largest shard, beside index.json): it would evict most
  // of a remote dataset.
  uint64_t largest = 0, total = 0;
  const auto written = LocalDataset::Open(tmp_ / "local").value();
  for (const auto& shard : written->index().shards) {
    largest = std::max(largest, shard.raw_data.bytes + shard.zip_data->bytes);
    total += shard.raw_data.bytes + shard.zip_data->bytes;
  }
  o.cache_limit = std::filesystem::file_size(tmp_ / "local" / "index.json") + 4 * largest;
  ASSERT_LT(*o.cache_limit, total);
  auto ds = StreamingDataset::Open(o).value();
  EXPECT_EQ(ReadAll(*ds->Iterate({.epoch = 0}).value()).size(), 300u);
  EXPECT_EQ(ReadAll(*ds->Iterate({.epoch = 1}).value()).size(), 300u);
  auto check = LocalDataset::Open(tmp_ / "local");
  ASSERT_TRUE(check.has_value()) << check.status().ToString();  // every file still there
  for (const auto& shard : (*check)->index().shards) {
    EXPECT_TRUE(std::filesystem::exists(tmp_ / "local" / shard.zip_data->basename));
  }
}

TEST_F(StreamingDatasetTest, RandomAccessFetchesJustTheShardItNeeds) {
  auto ds = StreamingDataset::Open(Remote()).value();
  auto s = ds->Get(777);
  ASSERT_TRUE(s.has_value()) << s.status().ToString();
  EXPECT_EQ(SampleId(*s), 777);
  EXPECT_EQ(ds->Get(5000).status().code(), StatusCode::kOutOfRange);
}

TEST_F(StreamingDatasetTest, StreamsMixByChooseRepeatAndProportion) {
  WriteDataset(tmp_ / "second", 200, 25);
  StreamingOptions o;
  o.streams = {
      {.remote = (tmp_ / "remote").string(), .local = (tmp_ / "c1").string(), .choose = 150},
      {.remote = (tmp_ / "second").string(), .local = (tmp_ / "c2").string(), .repeat = 1.5}};
  auto ds = StreamingDataset::Open(o);
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  EXPECT_EQ((*ds)->num_samples(), 1200u);
  EXPECT_EQ((*ds)->epoch_samples(), 150u + 300u);
  std::map<uint32_t, int> per_stream;
  std::set<uint64_t> first_epoch_ids;
  auto it = (*ds)->Iterate({.epoch = 0}).value();
  for (;;) {
    auto s = it->Next().value();
    if (!s) break;
    ++per_stream[s->stream];
    if (s->stream == 0) first_epoch_ids.insert(s->id);
  }
  EXPECT_EQ(per_stream[0], 150);
  EXPECT_EQ(per_stream[1], 300);
  EXPECT_EQ(first_epoch_ids.size(), 150u);  // a subset without repeats
  // Balanced sampling draws a different subset in the next epoch.
  std::set<uint64_t> second_epoch_ids;
  auto it2 = (*ds)->Iterate({.epoch = 1}).value();
  for (;;) {
    auto s = it2->Next().value();
    if (!s) break;
    if (s->stream == 0) second_epoch_ids.insert(s->id);
  }
  EXPECT_NE(first_epoch_ids, second_epoch_ids);

  StreamingOptions p;
  p.streams = {
      {.remote = (tmp_ / "remote").string(), .local = (tmp_ / "c1").string(), .proportion = 3},
      {.remote = (tmp_ / "second").string(), .local = (tmp_ / "c2").string(), .proportion = 1}};
  p.epoch_size = 400;
  auto mixed = StreamingDataset::Open(p);
  ASSERT_TRUE(mixed.has_value()) << mixed.status().ToString();
  EXPECT_EQ((*mixed)->epoch_samples(), 400u);
  // Without an epoch_size the proportions share all the streams' samples (as Mosaic).
  p.epoch_size.reset();
  auto derived = StreamingDataset::Open(p);
  ASSERT_TRUE(derived.has_value()) << derived.status().ToString();
  EXPECT_EQ((*derived)->epoch_samples(), 1200u);
  const std::vector<StreamWeight> weights = (*derived)->stream_weights();
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(weights[0].choose, 900u);
  EXPECT_DOUBLE_EQ(weights[0].repeat, 0.9);
  EXPECT_DOUBLE_EQ(weights[1].proportion, 0.25);
  EXPECT_DOUBLE_EQ(weights[1].repeat, 1.5);
}

TEST_F(StreamingDatasetTest, BadInputIsAClearError) {
  StreamingOptions o;
  o.streams = {{.remote = (tmp_ / "nothing").string(), .local = (tmp_ / "c").string()}};
  auto missing = StreamingDataset::Open(o);
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message(), HasSubstr("nothing"));
  StreamingOptions none;
  EXPECT_EQ(StreamingDataset::Open(none).status().code(), StatusCode::kInvalidArgument);
  StreamingOptions no_downloads = Remote();
  no_downloads.download_concurrency = 0;
  auto zero = StreamingDataset::Open(no_downloads);
  ASSERT_FALSE(zero.has_value());
  EXPECT_THAT(zero.error().message(), HasSubstr("download_concurrency"));
  StreamingOptions no_window = Remote();
  no_window.predownload = 0;
  EXPECT_EQ(StreamingDataset::Open(no_window).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ferry
