// BatchComposition against its contract (src/order/batch_composition.h), position by position:
// which stream each global (or device) batch draws from, how many samples of each, which
// positions of each stream's own order, what is dropped and repeated, and the errors.
#include "order/batch_composition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ferry::internal_order {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

std::vector<double> Proportions(const std::vector<uint64_t>& n) {
  double total = 0;
  for (uint64_t x : n) total += static_cast<double>(x);
  std::vector<double> p;
  for (uint64_t x : n) p.push_back(static_cast<double>(x) / total);
  return p;
}

BatchComposition Make(BatchingMethod method, const std::vector<uint64_t>& n,
                      const WorldShape& world, uint32_t batch, uint64_t key = 11) {
  auto made = BatchComposition::Make(method, n, Proportions(n), world, batch, key);
  EXPECT_TRUE(made.has_value()) << made.status().ToString();
  return *made;
}

std::vector<StreamPosition> All(const BatchComposition& c) {
  std::vector<StreamPosition> out;
  BatchComposition::Cache cache;
  for (uint64_t k = 0; k < c.samples(); ++k) out.push_back(c.At(k, &cache));
  return out;
}

const WorldShape kWorlds[] = {{1, 1, 1}, {1, 4, 2}, {2, 2, 1}, {3, 2, 3}};

TEST(StratifiedParts, MosaicsRule) {
  // Floor of the share, then the largest remainders; equal remainders go to the later stream.
  EXPECT_THAT(*StratifiedParts(Proportions({200, 342}), 4), ElementsAre(1, 3));
  EXPECT_THAT(*StratifiedParts({0.5, 0.5}, 7), ElementsAre(3, 4));
  EXPECT_THAT(*StratifiedParts({2.0 / 7, 5.0 / 7}, 7), ElementsAre(2, 5));
  EXPECT_THAT(*StratifiedParts({1.0 / 3, 1.0 / 3, 1.0 / 3}, 4), ElementsAre(1, 1, 2));
  EXPECT_THAT(*StratifiedParts({0.1, 0.6, 0.3}, 10), ElementsAre(1, 6, 3));
  EXPECT_THAT(*StratifiedParts({1.0}, 12), ElementsAre(12));
}

TEST(StratifiedParts, AStreamWithNoPartIsAnError) {
  auto parts = StratifiedParts(Proportions({1000, 61}), 8);
  ASSERT_FALSE(parts.has_value());
  EXPECT_EQ(parts.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(parts.status().message(), AllOf(HasSubstr("Number of samples for stream 1"),
                                              HasSubstr("global batch of 8"), HasSubstr("is 0")));
}

TEST(StratifiedParts, ProportionsAddingUpToLessThanOneAreAnError) {
  auto parts = StratifiedParts({0.2, 0.2}, 10);
  ASSERT_FALSE(parts.has_value());
  EXPECT_EQ(parts.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(parts.status().message(), HasSubstr("add up to 0.4"));
}

TEST(BatchComposition, PerStreamEachGlobalBatchFromOneStreamInItsOwnOrder) {
  const std::vector<uint64_t> n = {50, 31, 100};
  for (const WorldShape& w : kWorlds) {
    for (uint32_t batch : {1u, 3u}) {
      const uint64_t ranks = uint64_t{w.nodes} * w.ranks_per_node;
      const uint64_t g = ranks * batch;
      const BatchComposition c = Make(BatchingMethod::kPerStream, n, w, batch);
      ASSERT_EQ(c.global_batch(), g);
      const auto all = All(c);
      std::vector<uint64_t> batches(n.size(), 0);
      for (uint64_t k = 0; k < c.samples(); k += g) {
        const uint32_t s = all[k].stream;
        for (uint64_t o = 0; o < g; ++o) {
          ASSERT_EQ(all[k + o].stream, s) << "global batch " << k / g;
          // Padded position batches[s] x G + o: the random order deals it to the same device.
          const uint64_t q = batches[s] * g + o;
          const uint64_t padded = CeilDiv(n[s], ranks) * ranks;
          const uint64_t expect = q < n[s] ? q : (q + n[s] - (padded - n[s]) % n[s]) % n[s];
          ASSERT_EQ(all[k + o].position, expect);
        }
        ++batches[s];
      }
      for (size_t s = 0; s < n.size(); ++s) {
        EXPECT_EQ(batches[s], CeilDiv(n[s], ranks) / batch) << "stream " << s;
      }
    }
  }
}

TEST(BatchComposition, StratifiedEachGlobalBatchHoldsEveryStreamsPart) {
  const std::vector<uint64_t> n = {60, 45, 100};
  for (const WorldShape& w : kWorlds) {
    for (uint32_t batch : {3u, 5u}) {
      const uint64_t g = uint64_t{w.nodes} * w.ranks_per_node * batch;
      const std::vector<uint64_t> parts = *StratifiedParts(Proportions(n), g);
      const BatchComposition c = Make(BatchingMethod::kStratified, n, w, batch);
      uint64_t batches = UINT64_MAX;
      for (size_t s = 0; s < n.size(); ++s) batches = std::min(batches, n[s] / parts[s]);
      ASSERT_EQ(c.samples(), batches * g);
      const auto all = All(c);
      for (uint64_t k = 0; k < c.samples(); k += g) {
        uint64_t o = 0;
        for (size_t s = 0; s < n.size(); ++s) {
          for (uint64_t i = 0; i < parts[s]; ++i, ++o) {
            ASSERT_EQ(all[k + o], (StreamPosition{static_cast<uint32_t>(s), k / g * parts[s] + i}))
                << "global batch " << k / g << ", offset " << o;
          }
        }
      }
    }
  }
}

TEST(BatchComposition, DevicePerStreamEachDeviceBatchFromOneStreamOfItsNode) {
  const std::vector<uint64_t> n = {70, 23, 41};
  for (const WorldShape& w : kWorlds) {
    for (uint32_t batch : {1u, 2u, 3u}) {
      const uint64_t p = w.nodes;
      const uint64_t r = w.ranks_per_node;
      const uint64_t ranks = p * r;
      const uint64_t g = ranks * batch;
      const BatchComposition c = Make(BatchingMethod::kDevicePerStream, n, w, batch);
      const auto all = All(c);
      // Per node: how often it read each device batch (stream, positions).
      std::vector<std::map<std::pair<uint32_t, std::vector<uint64_t>>, int>> read(p);
      uint64_t per_node = 0;
      for (size_t s = 0; s < n.size(); ++s) per_node += CeilDiv(n[s], p) * p / (p * batch);
      ASSERT_EQ(c.samples(), CeilDiv(per_node, r) * g);
      for (uint64_t k = 0; k < c.samples(); k += g) {
        for (uint64_t node = 0; node < p; ++node) {
          for (uint64_t rank = 0; rank < r; ++rank) {
            std::set<uint32_t> streams;
            std::vector<uint64_t> positions;
            for (uint64_t b = 0; b < batch; ++b) {
              const StreamPosition at = all[k + (b * r + rank) * p + node];
              streams.insert(at.stream);
              positions.push_back(at.position);
            }
            ASSERT_EQ(streams.size(), 1u) << "global batch " << k / g;
            const uint32_t s = *streams.begin();
            // The node's own positions of its stream (q % P == node), consecutive among them;
            // a padding repeat (the last P - 1 positions) comes from another node.
            for (uint64_t b = 0; b < batch; ++b) {
              if (positions[b] + p > n[s]) continue;
              ASSERT_EQ(positions[b] % p, node);
              ASSERT_EQ(positions[b], positions[0] + b * p);
            }
            ++read[node][{s, positions}];
          }
        }
      }
      for (uint64_t node = 0; node < p; ++node) {
        int repeated = 0;
        for (const auto& [what, count] : read[node]) repeated += count - 1;
        EXPECT_EQ(read[node].size(), per_node) << "node " << node;
        // Whole rounds of R: fewer than R device batches read twice, by other ranks.
        EXPECT_EQ(static_cast<uint64_t>(repeated), CeilDiv(per_node, r) * r - per_node);
      }
    }
  }
}

TEST(BatchComposition, TheStreamsOfBatchesAreShuffledByTheKey) {
  const std::vector<uint64_t> n = {400, 400};
  const auto streams = [&](uint64_t key) {
    std::vector<uint32_t> out;
    const BatchComposition c = Make(BatchingMethod::kPerStream, n, {}, 4, key);
    for (uint64_t k = 0; k < c.samples(); k += 4) out.push_back(c.At(k, nullptr).stream);
    return out;
  };
  EXPECT_EQ(streams(1), streams(1));
  EXPECT_NE(streams(1), streams(2));
  // Not one stream after the other.
  const auto one = streams(1);
  EXPECT_NE(std::vector<uint32_t>(one.begin(), one.begin() + 100), std::vector<uint32_t>(100, 0));
}

TEST(BatchComposition, AStreamTooSmallForItsBatchIsAnError) {
  // 2 nodes x 2 ranks x batch 3: a global batch of 12, device batches of 3 on each node.
  const WorldShape w{2, 2, 1};
  auto per_stream =
      BatchComposition::Make(BatchingMethod::kPerStream, {50, 7}, {0.9, 0.1}, w, 3, 0);
  ASSERT_FALSE(per_stream.has_value());
  EXPECT_EQ(per_stream.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(
      per_stream.status().message(),
      AllOf(HasSubstr("stream 1"), HasSubstr("(7)"),
            HasSubstr("global batch of 12 (batch_size 3 x 4 ranks)"), HasSubstr("per_stream")));
  // 5 samples pad to 6: 3 per node, one device batch of 3 each.
  EXPECT_TRUE(BatchComposition::Make(BatchingMethod::kDevicePerStream, {50, 5}, {0.9, 0.1}, w, 3, 0)
                  .has_value());
  auto device =
      BatchComposition::Make(BatchingMethod::kDevicePerStream, {50, 4}, {0.9, 0.1}, w, 3, 0);
  ASSERT_FALSE(device.has_value());
  EXPECT_THAT(device.status().message(),
              AllOf(HasSubstr("stream 1"), HasSubstr("device batch of 3 on each of 2 nodes"),
                    HasSubstr("device_per_stream")));
  // Stratified: a stream smaller than its part leaves no whole global batch - an empty epoch,
  // as Mosaic's.
  auto empty = BatchComposition::Make(BatchingMethod::kStratified, {50, 1}, {0.5, 0.5}, w, 3, 0);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->samples(), 0u);
}

TEST(BatchingMethod, ParseAndName) {
  for (auto m : {BatchingMethod::kRandom, BatchingMethod::kPerStream, BatchingMethod::kStratified,
                 BatchingMethod::kDevicePerStream}) {
    EXPECT_EQ(*ParseBatchingMethod(BatchingMethodName(m)), m);
  }
  auto bad = ParseBatchingMethod("bogus");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().message(),
            "batching_method bogus is not one of random, per_stream, stratified, "
            "device_per_stream");
}

}  // namespace
}  // namespace ferry::internal_order
