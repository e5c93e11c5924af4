#include "files/file_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace ferry::internal_files {
namespace {

using ::testing::ElementsAre;

// Every worker's files of one epoch, counted per file.
std::map<uint64_t, int> CountAll(uint64_t n, const WorldShape& world, uint64_t epoch,
                                 const FileOrderOptions& options) {
  std::map<uint64_t, int> seen;
  for (uint32_t node = 0; node < world.nodes; ++node) {
    for (uint32_t rank = 0; rank < world.ranks_per_node; ++rank) {
      for (uint32_t w = 0; w < world.workers_per_rank; ++w) {
        const std::vector<uint64_t> files =
            WorkerFiles(n, world, {node, rank, w}, epoch, options).value();
        for (uint64_t f : files) ++seen[f];
      }
    }
  }
  return seen;
}

TEST(FileOrder, WithoutShuffleDealsListingOrderLikeDistributedSampler) {
  // 2 ranks, 2 workers: rank r takes r, r+2, ...; its workers alternate.
  const WorldShape world{.nodes = 1, .ranks_per_node = 2, .workers_per_rank = 2};
  EXPECT_THAT(WorkerFiles(8, world, {0, 0, 0}, 0, {}).value(), ElementsAre(0, 4));
  EXPECT_THAT(WorkerFiles(8, world, {0, 0, 1}, 0, {}).value(), ElementsAre(2, 6));
  EXPECT_THAT(WorkerFiles(8, world, {0, 1, 0}, 0, {}).value(), ElementsAre(1, 5));
  EXPECT_THAT(WorkerFiles(8, world, {0, 1, 1}, 0, {}).value(), ElementsAre(3, 7));
}

TEST(FileOrder, EveryFileExactlyOnceWhenRanksDivideTheCount) {
  const WorldShape world{.nodes = 2, .ranks_per_node = 3, .workers_per_rank = 4};
  for (bool shuffle : {false, true}) {
    const auto seen = CountAll(600, world, 3, {.shuffle = shuffle, .seed = 7});
    ASSERT_EQ(seen.size(), 600u);
    for (const auto& [file, count] : seen) EXPECT_EQ(count, 1) << file;
  }
}

TEST(FileOrder, PadsByRepeatingTheStartOrDropsTheTail) {
  const WorldShape world{.nodes = 1, .ranks_per_node = 4, .workers_per_rank = 3};
  const auto order = EpochPermutation(10, 1, {.shuffle = true, .seed = 5});
  // 10 files over 4 ranks: padded to 12 - the permutation's first two files twice.
  auto padded = CountAll(10, world, 1, {.shuffle = true, .seed = 5});
  ASSERT_EQ(padded.size(), 10u);
  for (const auto& [file, count] : padded) {
    EXPECT_EQ(count, file == order[0] || file == order[1] ? 2 : 1) << file;
  }
  // drop_last: 8 files, the permutation's last two never.
  auto dropped = CountAll(10, world, 1, {.shuffle = true, .seed = 5, .drop_last = true});
  EXPECT_EQ(dropped.size(), 8u);
  EXPECT_FALSE(dropped.contains(order[8]));
  EXPECT_FALSE(dropped.contains(order[9]));
  // The ranks stay in step: every rank reads as many files.
  for (uint32_t rank = 0; rank < 4; ++rank) {
    uint64_t total = 0;
    for (uint32_t w = 0; w < 3; ++w) {
      total += WorkerFiles(10, world, {0, rank, w}, 1, {}).value().size();
    }
    EXPECT_EQ(total, 3u) << rank;
  }
}

TEST(FileOrder, ShuffleIsAFunctionOfSeedAndEpoch) {
  const auto a = EpochPermutation(1000, 2, {.shuffle = true, .seed = 11});
  EXPECT_EQ(a, EpochPermutation(1000, 2, {.shuffle = true, .seed = 11}));
  EXPECT_NE(a, EpochPermutation(1000, 3, {.shuffle = true, .seed = 11}));
  EXPECT_NE(a, EpochPermutation(1000, 2, {.shuffle = true, .seed = 12}));
  std::vector<uint64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, EpochPermutation(1000, 2, {}));
  EXPECT_NE(a, sorted);
}

TEST(FileOrder, RejectsAWorkerOutsideTheWorld) {
  const WorldShape world{.nodes = 1, .ranks_per_node = 2, .workers_per_rank = 2};
  auto bad = WorkerFiles(10, world, {0, 2, 0}, 0, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.error().message(), ::testing::HasSubstr("outside the world"));
  EXPECT_FALSE(WorkerFiles(10, {.nodes = 0}, {}, 0, {}).ok());
  EXPECT_TRUE(WorkerFiles(0, world, {0, 1, 1}, 0, {}).value().empty());
}

}  // namespace
}  // namespace ferry::internal_files
