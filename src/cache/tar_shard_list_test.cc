#include "cache/tar_shard_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace ferry::internal_cache {
namespace {

using ::testing::HasSubstr;

std::vector<ObjectInfo> Tars() {
  return {{.key = "ds/a.tar", .size = 10240, .etag = "1"},
          {.key = "ds/b.tar.gz", .size = 300, .etag = "2"},
          {.key = "ds/c.tar", .size = 20480, .etag = "3"}};
}

TEST(DescribeTarShards, DescribesEachTarWithItsCountAndTheTarInsideAGzippedOne) {
  auto described = DescribeTarShards(Tars(), "ds/", 2, [](size_t k, std::stop_token) {
    return Result<internal_format::TarShardCount>(
        internal_format::TarShardCount{.samples = 10 * (k + 1), .tar_bytes = 1000 * (k + 1)});
  });
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  ASSERT_EQ(described->shards.size(), 3u);
  EXPECT_EQ(described->shards[0].raw_data.basename, "a.tar");
  EXPECT_EQ(described->shards[0].raw_data.bytes, 10240u);
  EXPECT_EQ(described->shards[0].samples, 10u);
  EXPECT_EQ(described->shards[1].zip_data->basename, "b.tar.gz");
  EXPECT_EQ(described->shards[1].zip_data->bytes, 300u);
  EXPECT_EQ(described->shards[1].raw_data.basename, "b.tar");
  EXPECT_EQ(described->shards[1].raw_data.bytes, 2000u) << "the tar inside";
  EXPECT_EQ(described->shards[2].samples, 30u);
}

TEST(DescribeTarShards, AFailureStopsTheRestAndIsReportedNotTheCancellationsItCaused) {
  // Shard 0 is still being read when shard 1 fails: it gives up (cancelled), and the failure
  // that caused it is what the caller hears.
  auto described = DescribeTarShards(
      Tars(), "ds/", 2,
      [](size_t k, std::stop_token stop) -> Result<internal_format::TarShardCount> {
        if (k == 1) return DataLossError("ds/b.tar.gz: not a tar");
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return CancelledError("stopped");
      });
  ASSERT_FALSE(described.ok());
  EXPECT_EQ(described.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(described.status().message(), HasSubstr("b.tar.gz"));
}

TEST(TarListingVersion, ChangesWithAnyTarsSizeVersionOrPresence) {
  const std::string version = TarListingVersion(Tars());
  EXPECT_EQ(TarListingVersion(Tars()), version);
  auto resized = Tars();
  resized[2].size += 1;
  auto rewritten = Tars();
  rewritten[0].etag = "9";
  auto fewer = Tars();
  fewer.pop_back();
  for (const auto& other : {resized, rewritten, fewer}) {
    EXPECT_NE(TarListingVersion(other), version);
  }
  EXPECT_EQ(TarVersions(Tars(), "ds/").at("b.tar.gz"), "2");
}

}  // namespace
}  // namespace ferry::internal_cache
