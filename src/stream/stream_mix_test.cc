// ResolveWeights against the values Mosaic Streaming's Stream.apply_weights gives, and
// MixStreams' virtual shards for them.
#include "stream/stream_mix.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace ferry::internal_stream {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;

StreamSpec Proportion(double p) { return {.proportion = p}; }
StreamSpec Repeat(double r) { return {.repeat = r}; }
StreamSpec Choose(uint64_t c) { return {.choose = c}; }

std::vector<uint64_t> Chosen(const ResolvedWeights& w) {
  std::vector<uint64_t> out;
  for (const StreamWeight& s : w.streams) out.push_back(s.choose);
  return out;
}

TEST(ResolveWeightsTest, ProportionsWithoutEpochSizeShareAllTheSamples) {
  auto w = ResolveWeights({100, 300}, {Proportion(1), Proportion(1)}, std::nullopt, 7);
  ASSERT_TRUE(w.has_value()) << w.status().ToString();
  EXPECT_EQ(w->epoch_size, 400u);
  EXPECT_EQ(Chosen(*w), (std::vector<uint64_t>{200, 200}));
  EXPECT_DOUBLE_EQ(w->streams[0].proportion, 0.5);
  EXPECT_DOUBLE_EQ(w->streams[0].repeat, 2.0);
  EXPECT_DOUBLE_EQ(w->streams[1].repeat, 200.0 / 300.0);
  // Mosaic reads an epoch_size of 0 as none.
  auto zero = ResolveWeights({100, 300}, {Proportion(1), Proportion(3)}, 0, 7);
  ASSERT_TRUE(zero.has_value()) << zero.status().ToString();
  EXPECT_EQ(Chosen(*zero), (std::vector<uint64_t>{100, 300}));
}

TEST(ResolveWeightsTest, ProportionsOfAnEpochSize) {
  // Mosaic's test_mix_proportion_range: four streams of 2 samples, epoch_size 12.
  auto w = ResolveWeights(
      {2, 2, 2, 2}, {Proportion(0), Proportion(1.0 / 6), Proportion(2.0 / 6), Proportion(3.0 / 6)},
      12, 9176);
  ASSERT_TRUE(w.has_value()) << w.status().ToString();
  EXPECT_EQ(w->epoch_size, 12u);
  EXPECT_EQ(Chosen(*w), (std::vector<uint64_t>{0, 2, 4, 6}));
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_THAT(w->streams[s].proportion, DoubleNear(static_cast<double>(s) / 6, 1e-9));
    EXPECT_DOUBLE_EQ(w->streams[s].repeat, static_cast<double>(s));
  }
}

TEST(ResolveWeightsTest, RoundingLeftoversGoOneEachToSeededStreams) {
  std::set<std::vector<uint64_t>> seen;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto w = ResolveWeights({50, 50, 50}, {Proportion(1), Proportion(1), Proportion(1)}, 10, seed);
    ASSERT_TRUE(w.has_value()) << w.status().ToString();
    const std::vector<uint64_t> chosen = Chosen(*w);
    EXPECT_EQ(chosen[0] + chosen[1] + chosen[2], 10u);
    for (uint64_t c : chosen) EXPECT_TRUE(c == 3 || c == 4) << c;
    // The same seed draws the same streams.
    EXPECT_EQ(
        Chosen(ResolveWeights({50, 50, 50}, {Proportion(1), Proportion(1), Proportion(1)}, 10, seed)
                   .value()),
        chosen);
    seen.insert(chosen);
  }
  EXPECT_GT(seen.size(), 1u);  // the seed decides which stream gets the extra sample
}

TEST(ResolveWeightsTest, NoWeightsWithAnEpochSizeShareItBySize) {
  auto w = ResolveWeights({100, 200}, {{}, {}}, 30, 1);
  ASSERT_TRUE(w.has_value()) << w.status().ToString();
  EXPECT_EQ(Chosen(*w), (std::vector<uint64_t>{10, 20}));
  EXPECT_THAT(w->streams[0].proportion, DoubleNear(1.0 / 3, 1e-12));
  EXPECT_DOUBLE_EQ(w->streams[1].repeat, 0.1);
  auto up = ResolveWeights({100, 200}, {{}, {}}, 600, 1);
  ASSERT_TRUE(up.has_value()) << up.status().ToString();
  EXPECT_EQ(Chosen(*up), (std::vector<uint64_t>{200, 400}));
}

TEST(ResolveWeightsTest, AbsoluteWeights) {
  // Mosaic's test_mix_repeat_choose_none: repeat 0, nothing, repeat 2, choose 6.
  auto w = ResolveWeights({2, 2, 2, 2}, {Repeat(0), {}, Repeat(2), Choose(6)}, std::nullopt, 1);
  ASSERT_TRUE(w.has_value()) << w.status().ToString();
  EXPECT_EQ(w->epoch_size, 12u);
  EXPECT_EQ(Chosen(*w), (std::vector<uint64_t>{0, 2, 4, 6}));
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_THAT(w->streams[s].proportion, DoubleNear(static_cast<double>(s) / 6, 1e-9));
    EXPECT_DOUBLE_EQ(w->streams[s].repeat, static_cast<double>(s));
  }
  // repeat x samples rounds down, as Python's int(): 0.29 x 100 is 28.999999999999996.
  EXPECT_EQ(Chosen(ResolveWeights({100}, {Repeat(0.29)}, std::nullopt, 1).value()),
            (std::vector<uint64_t>{28}));
  // No weights and no epoch_size: every sample once.
  auto all = ResolveWeights({3, 5}, {{}, {}}, std::nullopt, 1);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(Chosen(*all), (std::vector<uint64_t>{3, 5}));
  EXPECT_DOUBLE_EQ(all->streams[1].proportion, 5.0 / 8);
  EXPECT_DOUBLE_EQ(all->streams[1].repeat, 1.0);
}

TEST(ResolveWeightsTest, RefusesWhatMosaicRefuses) {
  auto error = [](std::vector<StreamSpec> specs, std::optional<uint64_t> epoch_size) {
    std::vector<uint64_t> samples(specs.size(), 10);
    auto w = ResolveWeights(samples, specs, epoch_size, 1);
    EXPECT_FALSE(w.has_value());
    if (w.has_value()) return std::string();
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
    return w.status().message();
  };
  EXPECT_THAT(error({Proportion(1), Choose(3)}, std::nullopt),
              HasSubstr("incompatible with each other: stream 0 gives proportion, stream 1 "
                        "gives choose"));
  EXPECT_THAT(error({{}, Proportion(1)}, 20), HasSubstr("stream 1 gives proportion"));
  EXPECT_THAT(error({{}, Repeat(2)}, 20), HasSubstr("epoch_size 20"));
  EXPECT_THAT(error({{.proportion = 1, .choose = 2}}, std::nullopt),
              HasSubstr("at most one of proportion, repeat and choose"));
  EXPECT_THAT(error({Repeat(-1)}, std::nullopt), HasSubstr("stream 0: repeat must be"));
  EXPECT_THAT(error({Proportion(0), Proportion(0)}, std::nullopt), HasSubstr("sum to zero"));
}

TEST(MixStreamsTest, ChosenSamplesAreCopiesPlusAShardWiseSubset) {
  // Stream 0: shards of 4 and 6 samples, chosen 13 = one copy + 3; stream 1: 5 of 5.
  auto mix = MixStreams({{4, 6}, {5}}, {13, 5}, SamplingMethod::kBalanced, 1, 0);
  ASSERT_TRUE(mix.has_value()) << mix.status().ToString();
  EXPECT_EQ(mix->total, 18u);
  uint64_t partial = 0;
  for (const VirtualShard& v : mix->shards) partial += v.picks ? 1 : 0;
  EXPECT_EQ(partial, 1u);  // the 3 extra samples come from one shard
  EXPECT_FALSE(MixStreams({{}, {5}}, {1, 5}, SamplingMethod::kBalanced, 1, 0).has_value());
}

}  // namespace
}  // namespace ferry::internal_stream
