// A sample served from a shard still downloading, through a real server: s3rver behind ferry-wan
// at 1 MB/s a connection, so that a 3 MB shard's one download stays part-way for seconds. The
// samples in the part that has landed are read while the shard is not yet in the cache folder,
// each with its own bytes; the rest as they land.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/little_endian.h"
#include "ferry/metrics/metrics.h"
#include "ferry/stream/streaming_dataset.h"
#include "tests/integration/stream_testutil.h"

namespace ferry::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kLandedSamples = 150;
constexpr size_t kLandedBlob = 20'000;

TEST(Stream, SamplesAreServedFromTheLandedPartOfAShardStillDownloading) {
  TempDir tmp;
  const Dataset d = MakeRemoteDataset(tmp, "landed", kLandedSamples, kLandedBlob, 4 << 20);
  ASSERT_EQ(d.index.shards.size(), 1u);
  TempDir wan_dir;
  const std::string endpoint = StartWan(wan_dir, "--conn-mbps 1");
  const WanGuard wan(wan_dir);
  ::setenv("AWS_ENDPOINT_URL", endpoint.c_str(), 1);

  StreamingOptions o;
  o.streams = {{.remote = d.url, .local = (tmp / "cache").string()}};
  o.order.batch_size = 1;  // the first sample alone is read by range
  auto ds = StreamingDataset::Open(o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  metrics::Counter& landed_reads = metrics::GetCounter("/ferry/stream/landed_reads");
  const uint64_t landed_before = landed_reads.value();
  auto it = (*ds)->Iterate({.epoch = 0});
  ASSERT_TRUE(it.ok()) << it.status().ToString();

  const fs::path shard = tmp / "cache" / d.index.shards[0].raw_data.basename;
  uint64_t while_downloading = 0;
  for (uint64_t i = 0; i < kLandedSamples; ++i) {
    auto sample = (*it)->Next();
    ASSERT_TRUE(sample.ok()) << sample.status().ToString();
    ASSERT_TRUE(sample->has_value()) << "the epoch ended at " << i;
    // Checked before the next sample: the file under the shard's name appears only complete.
    if (!fs::exists(shard)) ++while_downloading;
    const Sample& s = **sample;
    const ShardConfig& config = *s.config;
    const std::string_view id = s.fields[*config.ColumnIndex("id")];
    ASSERT_EQ(id.size(), 8u);
    ASSERT_EQ(LoadLE<int64_t>(id.data()), static_cast<int64_t>(i)) << "shard order";
    ASSERT_EQ(s.fields[*config.ColumnIndex("blob")], TestBytes(kLandedBlob, i)) << "sample " << i;
  }
  auto end = (*it)->Next();
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_FALSE(end->has_value());
  std::cerr << while_downloading << " of " << kLandedSamples
            << " samples read before the shard was in the cache folder, "
            << landed_reads.value() - landed_before << " from the download in progress\n";
  // The 3 MB take three seconds to come; the samples are read as their bytes land, not after.
  EXPECT_GE(while_downloading, kLandedSamples / 4)
      << "samples read before the shard was in the cache folder";
  EXPECT_GE(landed_reads.value() - landed_before, while_downloading - 1)
      << "all but the first (read by range) came from the download in progress";
  // The last samples can be served from the landed bytes before the download renames its file
  // into place, so the epoch may end a moment before the shard is in the cache folder.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!fs::exists(shard) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(fs::exists(shard)) << "the download completes";
}

}  // namespace
}  // namespace ferry::testing
