#include "stream/open_shards.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>
#include <unordered_map>

#include "base/temp_dir_testutil.h"
#include "ferry/format/mds_writer.h"
#include "ferry/format/shard_format.h"

namespace ferry::internal_stream {
namespace {

namespace fs = std::filesystem;

class OpenShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer =
        MdsWriter::Create({.out = tmp_.path(), .columns = {{"x", "bytes"}}, .size_limit = 200})
            .value();
    for (int i = 0; i < 40; ++i) {
      const Value values[] = {Value(Bytes{std::string(50, 'x')})};
      ASSERT_TRUE(writer->WriteValues(values).ok());
    }
    index_ = writer->Finish().value();
    ASSERT_GE(index_.shards.size(), 4u);
  }
  fs::path Path(uint32_t k) const { return tmp_.path() / index_.shards[k].raw_data.basename; }
  std::shared_ptr<const OpenShard> Shard(uint32_t k) const {
    return std::make_shared<const OpenShard>(
        ShardHandle(), FindShardFormat("mds").value()->Open(Path(k), index_.shards[k]).value());
  }

  testing::TempDir tmp_;
  DatasetDescription index_;
};

TEST_F(OpenShardsTest, KeepsTheRecentOnesWithinTheByteCap) {
  OpenShards open;
  const uint64_t bytes = index_.shards[0].raw_data.bytes;
  for (uint32_t k = 0; k < 3; ++k) open.Add({0, k}, Shard(k), bytes, 2 * bytes);
  EXPECT_EQ(open.Find({0, 0}), nullptr) << "the least recently used went past the cap";
  EXPECT_NE(open.Find({0, 1}), nullptr);
  EXPECT_NE(open.Find({0, 2}), nullptr);
  // One held by a reader is still found when it leaves the recent ones.
  auto held = Shard(3);
  open.Add({0, 3}, held, bytes, bytes);
  EXPECT_EQ(open.Find({0, 3}), held);
  open.Add({0, 1}, Shard(1), bytes, bytes);
  EXPECT_EQ(open.Find({0, 3}), held);
  open.Drop({0, 3}, /*deleted=*/false);
  EXPECT_EQ(open.Find({0, 3}), nullptr);
  EXPECT_FALSE(held->deleted);
}

TEST_F(OpenShardsTest, AShardWhoseFileIsDeletedIsDroppedAndMarked) {
  OpenShards open;
  std::unordered_map<std::string, ShardKey> files;
  for (uint32_t k = 0; k < index_.shards.size(); ++k) files[Path(k).string()] = {0, k};
  open.Watch(files);
  auto held = Shard(1);
  open.Add({0, 1}, held, 1, UINT64_MAX);
  open.Add({0, 2}, Shard(2), 1, UINT64_MAX);
  fs::remove(Path(1));
  open.DrainDeletions();
  EXPECT_TRUE(held->deleted) << "its readers drop it";
  EXPECT_EQ(open.Find({0, 1}), nullptr);
  EXPECT_NE(open.Find({0, 2}), nullptr) << "only the deleted one";
}

TEST(DrainEvery, EverySampleAtFirstThenAboutEvery20To80Microseconds) {
  DrainEvery drain;
  // Samples that come slowly (a reader waiting on downloads, as at the start): every one.
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    EXPECT_TRUE(drain.Due()) << i;
  }
  // Samples that come fast: the drains spread out, doubling.
  int due = 0;
  for (int i = 0; i < 10'000; ++i) due += drain.Due();
  EXPECT_GT(drain.every(), 2u);
  EXPECT_LT(due, 10'000 / 2);
  // Slow samples (a reader waiting on downloads): back to every sample.
  const uint32_t spread = drain.every();
  for (uint32_t i = 0; i < 40 * spread && drain.every() > 1; ++i) {
    if (drain.Due()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_EQ(drain.every(), 1u);
}

}  // namespace
}  // namespace ferry::internal_stream
