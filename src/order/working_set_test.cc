// The working-set estimate against real plans: for every algorithm and several world shapes,
// the bytes of shards that node 0's readers hold live at once (from each shard's first use to
// its last, per canonical node) never exceed the estimate; and NarrowToFit picks the widest
// order that fits.
#include "order/working_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "order/partition.h"
#include "order/shard_sizes_testutil.h"

namespace ferry::internal_order {
namespace {

constexpr uint64_t kBytesPerSample = 1000;

struct Case {
  bool shuffle;
  ShuffleAlgo algo;
  uint64_t block;
};

std::string Name(const Case& c) {
  return (c.shuffle ? std::string(ShuffleAlgoName(c.algo)) : std::string("none")) + "/bs" +
         std::to_string(c.block);
}

StreamFootprint Footprint(const std::vector<uint64_t>& shards) {
  StreamFootprint f;
  for (uint64_t n : shards) {
    f.samples += n;
    f.bytes += n * kBytesPerSample;
    f.max_shard_bytes = std::max(f.max_shard_bytes, n * kBytesPerSample);
  }
  return f;
}

// The most bytes of shards live at once on node 0. A piece is a shard within one canonical node:
// a shard cut by a span boundary is read at both ends of the epoch, once by each canonical node,
// and is live around each of those reads, not in between.
uint64_t Measure(const std::vector<uint64_t>& shards, const OrderOptions& options,
                 const WorldShape& world) {
  auto plan = EpochPlan::Create(shards, options, world, /*epoch=*/2);
  EXPECT_TRUE(plan.has_value()) << plan.status().ToString();
  if (!plan) return 0;
  auto partition = Partition::Make(world, options, (*plan)->dataset_samples(), 0);
  EXPECT_TRUE(partition.has_value());

  // Each piece is live from its first use to its last; a shard read by two canonical nodes is
  // live while either of its pieces is (and takes its bytes once).
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> pieces;
  for (uint64_t i = 0; i < (*plan)->epoch_samples(); ++i) {
    const CanonicalPosition cp = partition->Global(i);
    if (cp.node % world.nodes != 0) continue;  // node 0 reads the canonical nodes c % P == 0
    const uint32_t shard = (*plan)->Locate((*plan)->GlobalSample(i)).first;
    auto [it, inserted] = pieces.try_emplace({shard, cp.node}, i, i);
    it->second.second = i;
  }
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> by_shard;
  for (const auto& [key, interval] : pieces) by_shard[key.first].push_back(interval);
  std::map<uint64_t, int64_t> delta;  // bytes becoming live (+) or dead (-) at a position
  for (auto& [shard, intervals] : by_shard) {
    std::sort(intervals.begin(), intervals.end());
    const int64_t bytes = static_cast<int64_t>(shards[shard] * kBytesPerSample);
    std::pair<uint64_t, uint64_t> run = intervals[0];
    for (size_t k = 1; k <= intervals.size(); ++k) {
      if (k < intervals.size() && intervals[k].first <= run.second + 1) {
        run.second = std::max(run.second, intervals[k].second);
        continue;
      }
      delta[run.first] += bytes;
      delta[run.second + 1] -= bytes;
      if (k < intervals.size()) run = intervals[k];
    }
  }
  int64_t now = 0, most = 0;
  for (const auto& [position, d] : delta) {
    now += d;
    most = std::max(most, now);
  }

  return static_cast<uint64_t>(most);
}

TEST(WorkingSet, BoundsTheShardsLiveAtOnce) {
  const Case cases[] = {{false, ShuffleAlgo::kPy1e, 64}, {true, ShuffleAlgo::kPy1s, 64},
                        {true, ShuffleAlgo::kPy1b, 64},  {true, ShuffleAlgo::kPy1br, 64},
                        {true, ShuffleAlgo::kPy1e, 64},  {true, ShuffleAlgo::kPy1e, 7},
                        {true, ShuffleAlgo::kPy1e, 500}, {true, ShuffleAlgo::kNaive, 64}};
  const WorldShape worlds[] = {{1, 1, 1}, {1, 1, 2}, {1, 2, 3}, {2, 1, 2}};
  for (uint64_t seed : {1, 2}) {
    const std::vector<uint64_t> shards = testing::RandomShardsAddingUpTo(3000, 60, seed);
    const StreamFootprint footprint = Footprint(shards);
    for (const Case& c : cases) {
      for (const WorldShape& world : worlds) {
        for (uint32_t batch : {1u, 4u}) {
          OrderOptions options;
          options.shuffle = c.shuffle;
          options.algo = c.algo;
          options.shuffle_block_size = c.block;
          options.seed = seed;
          options.batch_size = batch;
          options.drop_last = true;  // no repeats: they re-read early samples at the end
          const WorkingSet ws = EstimateWorkingSet({&footprint, 1}, options, world);
          const uint64_t live = Measure(shards, options, world);
          SCOPED_TRACE(Name(c) + " world " + std::to_string(world.nodes) + "x" +
                       std::to_string(world.ranks_per_node) + "x" +
                       std::to_string(world.workers_per_rank) + " batch " + std::to_string(batch) +
                       " seed " + std::to_string(seed));
          ASSERT_EQ(ws.bytes.size(), 1u);
          EXPECT_LE(live, ws.bytes[0]);
          // Not vacuous: the estimate stays within a few shards of what is live, except naive,
          // whose bound is the whole span.
          if (c.algo != ShuffleAlgo::kNaive || !c.shuffle) {
            EXPECT_LE(ws.bytes[0], live * 4 + 6 * footprint.max_shard_bytes);
          }
        }
      }
    }
  }
}

TEST(WorkingSet, GrowsWithTheBlockAndTheCanonicalNodes) {
  const StreamFootprint f{.samples = 100000,
                          .bytes = 100000 * kBytesPerSample,
                          .max_shard_bytes = 100 * kBytesPerSample};
  OrderOptions o;
  o.shuffle = true;
  o.algo = ShuffleAlgo::kPy1e;
  o.shuffle_block_size = 1000;
  o.num_canonical_nodes = 1;
  const uint64_t one = EstimateWorkingSet({&f, 1}, o, {}).Largest();
  o.shuffle_block_size = 2000;
  EXPECT_GT(EstimateWorkingSet({&f, 1}, o, {}).Largest(), one);
  o.shuffle_block_size = 1000;
  o.num_canonical_nodes = 8;
  EXPECT_EQ(EstimateWorkingSet({&f, 1}, o, {}).Largest(), 8 * one);
  // py1s: one shard per canonical node.
  o.algo = ShuffleAlgo::kPy1s;
  EXPECT_EQ(EstimateWorkingSet({&f, 1}, o, {}).Largest(), 8 * f.max_shard_bytes);
  // Never more than the stream.
  o.algo = ShuffleAlgo::kNaive;
  EXPECT_EQ(EstimateWorkingSet({&f, 1}, o, {}).Largest(), f.bytes);
}

TEST(WorkingSet, NarrowsToTheWidestBlockThatFits) {
  const std::vector<uint64_t> shards(60, 50);  // 3,000 samples, 50 KB shards
  const StreamFootprint f = Footprint(shards);
  OrderOptions o;
  o.shuffle = true;
  o.algo = ShuffleAlgo::kPy1e;
  o.shuffle_block_size = 1 << 18;
  const WorldShape world{1, 1, 2};
  const uint64_t room = f.bytes / 6;

  const WorkingSetFit fit = NarrowToFit({&f, 1}, o, world, room);
  EXPECT_GT(fit.asked.Largest(), room);
  EXPECT_TRUE(fit.narrowed);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.order.algo, ShuffleAlgo::kPy1e);
  EXPECT_LT(fit.order.shuffle_block_size, o.shuffle_block_size);
  EXPECT_GE(fit.order.shuffle_block_size, 1u);
  EXPECT_LE(fit.used.Largest(), room);
  EXPECT_EQ(fit.used.Largest(), EstimateWorkingSet({&f, 1}, fit.order, world).Largest());
  OrderOptions wider = fit.order;
  ++wider.shuffle_block_size;
  EXPECT_GT(EstimateWorkingSet({&f, 1}, wider, world).Largest(), room);

  // What fits is left alone.
  const WorkingSetFit roomy = NarrowToFit({&f, 1}, o, world, f.bytes);
  EXPECT_FALSE(roomy.narrowed);
  EXPECT_TRUE(roomy.fits);
  EXPECT_EQ(roomy.order.shuffle_block_size, o.shuffle_block_size);

  // Naive becomes py1e over the widest window that fits.
  o.algo = ShuffleAlgo::kNaive;
  const WorkingSetFit naive = NarrowToFit({&f, 1}, o, world, room);
  EXPECT_TRUE(naive.narrowed);
  EXPECT_EQ(naive.order.algo, ShuffleAlgo::kPy1e);
  EXPECT_LE(naive.used.Largest(), room);

  // No block fits: py1s, the least a shuffle needs - which fits here...
  o.algo = ShuffleAlgo::kPy1b;
  const uint64_t tiny = f.max_shard_bytes;  // one canonical node (one node's default), one shard
  const WorkingSetFit py1s = NarrowToFit({&f, 1}, o, world, tiny);
  EXPECT_EQ(py1s.order.algo, ShuffleAlgo::kPy1s);
  EXPECT_TRUE(py1s.fits);
  // ...and does not, one byte below.
  const WorkingSetFit none = NarrowToFit({&f, 1}, o, world, tiny - 1);
  EXPECT_EQ(none.order.algo, ShuffleAlgo::kPy1s);
  EXPECT_FALSE(none.fits);
}

TEST(WorkingSet, NarrowsEveryStreamToItsRoom) {
  StreamFootprint small{.samples = 1000, .bytes = 1000 * 100, .max_shard_bytes = 100 * 100};
  StreamFootprint big{.samples = 1000, .bytes = 1000 * 10000, .max_shard_bytes = 100 * 10000};
  const StreamFootprint both[] = {small, big};
  OrderOptions o;
  o.shuffle = true;
  o.algo = ShuffleAlgo::kPy1b;
  o.shuffle_block_size = 1000;
  o.num_canonical_nodes = 1;
  const uint64_t room = 4 * big.max_shard_bytes;
  const WorkingSetFit fit = NarrowToFit(both, o, {}, room);
  ASSERT_EQ(fit.used.bytes.size(), 2u);
  EXPECT_TRUE(fit.fits);
  EXPECT_LE(fit.used.bytes[1], room);  // the big stream set the block
  EXPECT_LT(fit.used.bytes[0], room);  // the small one fits with room to spare
  EXPECT_LT(fit.order.shuffle_block_size, 1000u);
}

}  // namespace
}  // namespace ferry::internal_order

namespace ferry::internal_order {
namespace {

// A node reads C / gcd(C, P) canonical nodes: all 4 of them when 3 nodes share 4 (a job resumed
// on another node count), half when 2 nodes do.
TEST(WorkingSet, CountsTheCanonicalNodesANodeReallyReads) {
  const StreamFootprint f{.samples = 100000, .bytes = 100000 * 1000, .max_shard_bytes = 100000};
  OrderOptions o;
  o.shuffle = true;
  o.algo = ShuffleAlgo::kPy1s;
  o.num_canonical_nodes = 4;
  const uint64_t one = EstimateWorkingSet({&f, 1}, o, {1, 1, 1}).Largest();
  EXPECT_EQ(one, 4 * f.max_shard_bytes);
  EXPECT_EQ(EstimateWorkingSet({&f, 1}, o, {3, 1, 1}).Largest(), one);
  EXPECT_EQ(EstimateWorkingSet({&f, 1}, o, {2, 1, 1}).Largest(), one / 2);
}

}  // namespace
}  // namespace ferry::internal_order
