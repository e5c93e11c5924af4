// A cache_limit smaller than the dataset, with the default shuffle (py1e over a block larger than
// the dataset, so every shard is live all epoch): the order is narrowed to a working set that
// fits, and an epoch fetches about the dataset once - not once per visit of a shard. Two readers
// share the cache folder: two workers of one process (one ShardCache), and two ranks as two
// processes would be (a StreamingDataset each, on one folder).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <barrier>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "base/human_size.h"
#include "base/log.h"
#include "base/temp_dir_testutil.h"
#include "cache/eviction.h"
#include "ferry/format/mds_writer.h"
#include "ferry/metrics/metrics.h"
#include "ferry/stream/streaming_dataset.h"
#include "stream/stream_testutil.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kSamples = 4800;
constexpr uint64_t kPerShard = 100;
constexpr uint64_t kBlob = 2000;

using testing::SampleId;

int64_t DownloadedBytes() { return metrics::Values()["/ferry/cache/downloaded_bytes"]; }

// Every log line at warn or above while it lives.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    sink_->set_level(spdlog::level::warn);
    Log().sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = Log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

class CacheLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = MdsWriter::Create({.out = tmp_ / "remote",
                                     .columns = {{"id", "int"}, {"blob", "bytes"}},
                                     .size_limit = 300 + kPerShard * (kBlob + 16)})
                      .value();
    for (uint64_t i = 0; i < kSamples; ++i) {
      const Value values[] = {Value(Bytes{std::string(kBlob, static_cast<char>('a' + i % 26))}),
                              Value(static_cast<int64_t>(i))};
      ASSERT_TRUE(writer->WriteValues(values).ok());
    }
    const DatasetDescription index = writer->Finish().value();
    for (const ShardDescription& shard : index.shards) dataset_bytes_ += shard.raw_data.bytes;
    ASSERT_GE(index.shards.size(), 40u);
  }

  StreamingOptions Options() const {
    StreamingOptions o;
    o.streams = {{.remote = (tmp_ / "remote").string(), .local = (tmp_ / "cache").string()}};
    o.order.shuffle = true;  // py1e, shuffle_block_size 262144: the whole dataset at once
    o.cache_limit = dataset_bytes_ / 3;
    return o;
  }

  // Reads worker `worker` of `world` to the end; its sample ids. With `pace`, it waits there for
  // the other reader every 50 samples: readers of one node progress together, as training's
  // do, and a loaded machine that starves one of them does not make the other run a whole
  // cache limit ahead.
  static std::vector<int64_t> Read(StreamingDataset& ds, WorldShape world, WorkerId worker,
                                   std::barrier<>* pace = nullptr) {
    std::vector<int64_t> ids;
    struct Leave {
      std::barrier<>* pace;
      ~Leave() {
        if (pace != nullptr) pace->arrive_and_drop();
      }
    } leave{pace};
    auto it = ds.Iterate({.world = world, .worker = worker, .epoch = 0});
    EXPECT_TRUE(it.has_value()) << it.status().ToString();
    if (!it) return ids;
    for (;;) {
      if (pace != nullptr && !ids.empty() && ids.size() % 50 == 0) pace->arrive_and_wait();
      auto sample = (*it)->Next();
      EXPECT_TRUE(sample.has_value()) << sample.status().ToString();
      if (!sample || !*sample) break;
      ids.push_back(SampleId(**sample));
    }
    return ids;
  }

  // Two readers of `world` read the epoch at once: between them every sample once, and about
  // the dataset's bytes fetched - 10 % slack, plus what the readers may have fetched ahead when
  // the epoch ends (the look-ahead's budget, at most 3/4 of the limit).
  void ReadTogether(const WorldShape& world, StreamingDataset& a, WorkerId a_id,
                    StreamingDataset& b, WorkerId b_id) const {
    const int64_t before = DownloadedBytes();
    std::vector<int64_t> read_a, read_b;
    {
      std::barrier pace(2);
      std::jthread other([&] { read_b = Read(b, world, b_id, &pace); });
      read_a = Read(a, world, a_id, &pace);
    }
    const int64_t fetched = DownloadedBytes() - before;
    const double bound = 1.1 * static_cast<double>(dataset_bytes_) +
                         0.75 * static_cast<double>(*Options().cache_limit);
    EXPECT_GE(fetched, static_cast<int64_t>(dataset_bytes_));
    EXPECT_LE(static_cast<double>(fetched), bound)
        << "fetched " << fetched << " bytes for a dataset of " << dataset_bytes_;
    std::set<int64_t> all(read_a.begin(), read_a.end());
    all.insert(read_b.begin(), read_b.end());
    EXPECT_EQ(all.size(), kSamples);
  }

  // What the cache folder holds besides shards (index.json, ferry's records), as the plan of a
  // limit counts it: the limit holds it too.
  uint64_t OtherBytes() const {
    return internal_cache::PlannedOtherBytes(internal_cache::CacheLayout(tmp_ / "cache"));
  }

  testing::TempDir tmp_;
  uint64_t dataset_bytes_ = 0;
};

TEST_F(CacheLimitTest, TwoWorkersOfOneProcessFetchTheDatasetAboutOnce) {
  LogCapture log;
  auto ds = StreamingDataset::Open(Options()).value();
  ReadTogether({.nodes = 1, .ranks_per_node = 1, .workers_per_rank = 2}, *ds, {.worker = 0}, *ds,
               {.worker = 1});
  // Said once, with the limit that would hold the order asked for: the dataset, whole, beside
  // its index.json.
  EXPECT_THAT(log.text(),
              HasSubstr("a cache_limit of " + FormatBytes(dataset_bytes_ + OtherBytes())));
  EXPECT_THAT(log.text(), HasSubstr("shuffle_block_size 262144"));
}

TEST_F(CacheLimitTest, TwoRanksOnOneFolderFetchTheDatasetAboutOnce) {
  // Two datasets on one folder: two processes' worth of caches, each with its own upcoming list.
  auto rank0 = StreamingDataset::Open(Options()).value();
  auto rank1 = StreamingDataset::Open(Options()).value();
  ReadTogether({.nodes = 1, .ranks_per_node = 2, .workers_per_rank = 1}, *rank0, {.rank = 0},
               *rank1, {.rank = 1});
}

TEST_F(CacheLimitTest, StrictRefusesWithTheLimitThatWouldFit) {
  StreamingOptions o = Options();
  o.strict_cache_limit = true;
  auto ds = StreamingDataset::Open(o).value();
  auto it = ds->Iterate({.epoch = 0});
  ASSERT_FALSE(it.has_value());
  EXPECT_EQ(it.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(it.status().message(),
              HasSubstr("a cache_limit of " + FormatBytes(dataset_bytes_ + OtherBytes())));
  EXPECT_THAT(it.status().message(), HasSubstr("py1s"));
  // Plan says the same: it is the order Iterate would read.
  EXPECT_FALSE(ds->Plan({}, 0).has_value());
  // A limit that holds the order is no error.
  o.cache_limit = dataset_bytes_ + OtherBytes();
  EXPECT_TRUE(StreamingDataset::Open(o).value()->Iterate({.epoch = 0}).has_value());
}

// Also when the folder's other files change between two opens - other jobs' processes come
// with their metrics files (8 KiB each), the binary index is written by the first - as they do
// between the opens of one job's DataLoader workers: an order narrowed by what they take now
// differed by a block, and the two workers read some samples twice and others never.
TEST_F(CacheLimitTest, TheNarrowedOrderIsTheSameForEveryReaderAndEveryOpen) {
  auto a = StreamingDataset::Open(Options()).value();
  const internal_cache::CacheLayout layout(tmp_ / "cache");
  for (int other = 0; other < 6; ++other) {
    std::ofstream(layout.MetricsDir() / fmt::format("other-job-{}", other))
        << std::string(8 << 10, ' ');
  }
  std::filesystem::remove(layout.BinaryIndexPath());
  auto b = StreamingDataset::Open(Options()).value();
  const WorldShape world{.nodes = 1, .ranks_per_node = 1, .workers_per_rank = 2};
  auto pa = a->Plan(world, 3).value();
  auto pb = b->Plan(world, 3).value();
  for (uint64_t i = 0; i < pa->epoch_samples(); i += 7) {
    ASSERT_EQ(pa->GlobalSample(i), pb->GlobalSample(i)) << i;
  }
  // And it is still a shuffle: not the shard order.
  uint64_t in_order = 0;
  for (uint64_t i = 1; i < pa->epoch_samples(); ++i) {
    in_order += pa->GlobalSample(i) == pa->GlobalSample(i - 1) + 1;
  }
  EXPECT_LT(in_order, pa->epoch_samples() / 4);
}

}  // namespace
}  // namespace ferry
