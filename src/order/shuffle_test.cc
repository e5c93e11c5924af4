// Tests of the orders inside a canonical node, algorithm by algorithm: each is a permutation of
// the node's samples, the same whether computed sequentially, at random or without a cache; the
// block shuffles keep shard locality; positions are spread over seeds; and blocks too large to
// materialize fall back to a per-sample permutation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "order/canonical_order.h"
#include "order/random.h"

namespace ferry::internal_order {
namespace {

constexpr ShuffleAlgo kAlgos[] = {ShuffleAlgo::kNaive, ShuffleAlgo::kPy1s, ShuffleAlgo::kPy1b,
                                  ShuffleAlgo::kPy1br, ShuffleAlgo::kPy1e};

std::vector<uint64_t> RandomShards(uint64_t count, uint64_t max_size, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint64_t> sizes(count);
  for (uint64_t& s : sizes) s = rng.Between(1, max_size);
  return sizes;
}

struct Fixture {
  std::shared_ptr<const CanonicalSpans> spans;
  std::unique_ptr<const CanonicalOrder> order;
};

Fixture Make(std::vector<uint64_t> shards, uint32_t c, ShuffleAlgo algo, uint64_t block_size,
             uint64_t seed = 1, uint64_t epoch = 0) {
  OrderOptions options;
  options.shuffle = true;
  options.algo = algo;
  options.seed = seed;
  options.shuffle_block_size = block_size;
  Fixture f;
  auto spans = CanonicalSpans::Make(std::move(shards), c, DeriveKey(EpochKey(seed, epoch), 7));
  EXPECT_TRUE(spans.has_value());
  f.spans = *spans;
  f.order = MakeCanonicalOrder(f.spans, options, epoch);
  return f;
}

std::vector<uint64_t> Sequence(const Fixture& f, uint32_t c, BlockCache* cache) {
  std::vector<uint64_t> out;
  for (uint64_t pos = 0; pos < f.spans->SpanLength(c); ++pos) {
    out.push_back(f.order->SampleAt(c, pos, cache));
  }
  return out;
}

TEST(Shuffle, EveryAlgorithmPermutesEachNodeAndAgreesWithItself) {
  for (const ShuffleAlgo algo : kAlgos) {
    for (const uint64_t block_size : {1u, 7u, 100u, 3000u}) {
      const Fixture f = Make(RandomShards(40, 300, 3), 3, algo, block_size);
      for (uint32_t c = 0; c < 3; ++c) {
        SCOPED_TRACE(std::string(ShuffleAlgoName(algo)) + " bs=" + std::to_string(block_size) +
                     " node " + std::to_string(c));
        BlockCache cache(1, 1 << 20);
        const std::vector<uint64_t> walked = Sequence(f, c, &cache);
        // The node's own samples, each once.
        std::vector<uint64_t> span_order(f.spans->SpanLength(c));
        f.spans->SamplesInRange(f.spans->SpanBegin(c), span_order);
        std::vector<uint64_t> expected = span_order;
        std::vector<uint64_t> sorted = walked;
        std::sort(sorted.begin(), sorted.end());
        std::sort(expected.begin(), expected.end());
        ASSERT_EQ(sorted, expected);
        // The same at random positions, with no cache or a one-block cache (each access then
        // finds its block from scratch, or from a far-away hint).
        Rng rng(c);
        BlockCache tiny(1, 0);
        for (int i = 0; i < 100; ++i) {
          const uint64_t pos = rng.Bounded(walked.size());
          ASSERT_EQ(f.order->SampleAt(c, pos, i % 2 ? &tiny : nullptr), walked[pos]) << pos;
        }
        // And backwards, from block to preceding block.
        BlockCache backwards(1, 0);
        for (uint64_t pos = walked.size(); pos-- > 0;) {
          ASSERT_EQ(f.order->SampleAt(c, pos, &backwards), walked[pos]) << pos;
        }
        // Shuffled for real (bs = 1 leaves the block shuffles in shard order, as it should).
        if (block_size > 1 || algo == ShuffleAlgo::kNaive || algo == ShuffleAlgo::kPy1s) {
          EXPECT_NE(walked, span_order);
        }
      }
    }
  }
}

TEST(Shuffle, Py1eMovesSamplesOnlyWithinTheirWindow) {
  const uint64_t block_size = 500;
  const Fixture f = Make(RandomShards(100, 400, 4), 2, ShuffleAlgo::kPy1e, block_size);
  for (uint32_t c = 0; c < 2; ++c) {
    // y: where each sample sits in the node's shard order.
    std::map<uint64_t, uint64_t> y_of;
    std::vector<uint64_t> span(f.spans->SpanLength(c));
    f.spans->SamplesInRange(f.spans->SpanBegin(c), span);
    for (uint64_t y = 0; y < span.size(); ++y) y_of[span[y]] = y;
    BlockCache cache(1, 1 << 20);
    const std::vector<uint64_t> seq = Sequence(f, c, &cache);
    double total = 0;
    int64_t worst = 0;
    for (uint64_t pos = 0; pos < seq.size(); ++pos) {
      const int64_t d =
          std::llabs(static_cast<int64_t>(pos) - static_cast<int64_t>(y_of[seq[pos]]));
      worst = std::max(worst, d);
      total += static_cast<double>(d);
    }
    // Slots stay within D = 625 of y; ranks add the local density fluctuation on top.
    EXPECT_LT(worst, 1000);
    // But the samples do move: a uniform draw in a ~bs window moves them ~bs/4 on average.
    EXPECT_GT(total / static_cast<double>(seq.size()), block_size / 10.0);
  }
}

// Average distinct shards per `window` consecutive samples of node 0.
double DistinctShardsPerWindow(const Fixture& f, uint64_t window) {
  BlockCache cache(1, 1 << 24);
  const std::vector<uint64_t> seq = Sequence(f, 0, &cache);
  double sum = 0;
  uint64_t windows = 0;
  for (uint64_t begin = 0; begin + window <= seq.size(); begin += window, ++windows) {
    std::set<uint32_t> shards;
    for (uint64_t i = begin; i < begin + window; ++i) shards.insert(f.spans->Locate(seq[i]).first);
    sum += static_cast<double>(shards.size());
  }
  return sum / static_cast<double>(windows);
}

TEST(Shuffle, BlockShufflesKeepShardLocality) {
  // 100 shards of 1000 samples, block size 4096, one canonical node.
  const std::vector<uint64_t> shards(100, 1000);
  const double py1s = DistinctShardsPerWindow(Make(shards, 1, ShuffleAlgo::kPy1s, 4096), 256);
  const double py1b = DistinctShardsPerWindow(Make(shards, 1, ShuffleAlgo::kPy1b, 4096), 256);
  const double py1br = DistinctShardsPerWindow(Make(shards, 1, ShuffleAlgo::kPy1br, 4096), 256);
  const double py1e = DistinctShardsPerWindow(Make(shards, 1, ShuffleAlgo::kPy1e, 4096), 256);
  const double naive = DistinctShardsPerWindow(Make(shards, 1, ShuffleAlgo::kNaive, 4096), 256);
  EXPECT_LE(py1s, 2.0);
  EXPECT_LE(py1b, 6.5);
  EXPECT_LE(py1br, 6.5);
  EXPECT_LE(py1e, 8.0);
  EXPECT_GE(naive, 60.0);
}

TEST(Shuffle, PositionsAreSpreadAcrossSeeds) {
  // Where does sample 1500 land, over 100 seeds? Everywhere, for every algorithm (its shard
  // moves with the shard order); under naive, uniformly.
  constexpr int kSeeds = 100;
  const std::vector<uint64_t> shards(12, 250);
  for (const ShuffleAlgo algo : kAlgos) {
    std::set<uint64_t> positions;
    double sum = 0;
    for (uint64_t seed = 0; seed < kSeeds; ++seed) {
      const Fixture f = Make(shards, 1, algo, 400, seed);
      BlockCache cache(1, 1 << 20);
      const std::vector<uint64_t> seq = Sequence(f, 0, &cache);
      const auto it = std::find(seq.begin(), seq.end(), 1500u);
      ASSERT_NE(it, seq.end());
      positions.insert(static_cast<uint64_t>(it - seq.begin()));
      sum += static_cast<double>(it - seq.begin());
    }
    SCOPED_TRACE(std::string(ShuffleAlgoName(algo)));
    EXPECT_GE(positions.size(), 85u);
    // Mean near the middle (1499.5); the standard error over 100 draws is ~87.
    EXPECT_NEAR(sum / kSeeds, 1499.5, 350);
  }
}

TEST(Shuffle, OrdersDependOnSeedAndEpochOnly) {
  const std::vector<uint64_t> shards = RandomShards(30, 200, 9);
  for (const ShuffleAlgo algo : kAlgos) {
    SCOPED_TRACE(std::string(ShuffleAlgoName(algo)));
    auto sequence = [&](uint64_t seed, uint64_t epoch) {
      BlockCache cache(1, 1 << 20);
      return Sequence(Make(shards, 2, algo, 256, seed, epoch), 1, &cache);
    };
    const auto a = sequence(1, 0);
    EXPECT_EQ(a, sequence(1, 0));
    EXPECT_NE(a, sequence(2, 0));
    EXPECT_NE(a, sequence(1, 1));
  }
}

TEST(Shuffle, HugeBlocksArePermutedPerSample) {
  // A shard past kMaxDenseBlock under py1s, and py1b with a block past it: no block is
  // materialized, yet positions still map to distinct samples of the right range.
  const uint64_t big = kMaxDenseBlock + 5;
  for (const ShuffleAlgo algo : {ShuffleAlgo::kPy1s, ShuffleAlgo::kPy1b}) {
    const Fixture f = Make({big}, 1, algo, big + 10);
    BlockCache cache(1, 1 << 20);
    std::set<uint64_t> seen;
    for (uint64_t pos = 0; pos < 2000; ++pos) {
      const uint64_t s = f.order->SampleAt(0, pos * 997 % big, &cache);
      ASSERT_LT(s, big);
      seen.insert(s);
    }
    EXPECT_EQ(seen.size(), 2000u);
    EXPECT_EQ(cache.size(), 0u);
  }
}

}  // namespace
}  // namespace ferry::internal_order
