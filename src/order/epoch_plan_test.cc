// Tests of the whole epoch plan against its documented model (include/ferry/order/epoch_plan.h):
// every sample exactly once plus the documented padding, for many world shapes, batch sizes,
// dataset sizes and every algorithm; determinism; canonical sequences independent of the world
// shape; exact resumption on the same and on another shape; cursor behaviour; errors.
//
// The dealing rule is re-derived here from the documentation (not from partition.cc), so each
// worker's samples can be put back into the canonical sequences they came from.
#include "ferry/order/epoch_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "order/shard_sizes_testutil.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kUnset = ~uint64_t{0};

struct Config {
  bool shuffle;
  ShuffleAlgo algo;
};

std::string ConfigName(const Config& c) {
  return c.shuffle ? std::string(ShuffleAlgoName(c.algo)) : "no_shuffle";
}

const Config kConfigs[] = {{false, ShuffleAlgo::kPy1e}, {true, ShuffleAlgo::kNaive},
                           {true, ShuffleAlgo::kPy1s},  {true, ShuffleAlgo::kPy1b},
                           {true, ShuffleAlgo::kPy1br}, {true, ShuffleAlgo::kPy1e}};

OrderOptions Options(const Config& config, uint32_t batch, uint32_t c = 0, bool drop_last = false) {
  OrderOptions o;
  o.shuffle = config.shuffle;
  o.algo = config.algo;
  o.seed = 17;
  o.shuffle_block_size = 300;
  o.num_canonical_nodes = c;
  o.batch_size = batch;
  o.drop_last = drop_last;
  return o;
}

// Shards of random sizes in [1, max_size] adding up to `total`.
std::vector<uint64_t> Shards(uint64_t total, uint64_t max_size, uint64_t seed) {
  return testing::RandomShardsAddingUpTo(total, max_size, seed);
}

std::shared_ptr<const EpochPlan> MustCreate(const std::vector<uint64_t>& shards,
                                            const OrderOptions& options, const WorldShape& world,
                                            uint64_t epoch = 3, uint64_t resume_from = 0) {
  auto plan = EpochPlan::Create(shards, options, world, epoch, resume_from);
  EXPECT_TRUE(plan.has_value()) << plan.status().ToString();
  return plan.has_value() ? *plan : nullptr;
}

std::vector<WorkerId> Workers(const WorldShape& w) {
  std::vector<WorkerId> ids;
  for (uint32_t n = 0; n < w.nodes; ++n) {
    for (uint32_t r = 0; r < w.ranks_per_node; ++r) {
      for (uint32_t k = 0; k < w.workers_per_rank; ++k) ids.push_back({n, r, k});
    }
  }
  return ids;
}

uint64_t Ranks(const WorldShape& w) { return uint64_t{w.nodes} * w.ranks_per_node; }

// Every worker's sequence, through cursors, in Workers() order; each rank's workers add up to
// exactly samples_per_rank.
std::vector<std::vector<uint64_t>> Walk(const EpochPlan& plan) {
  std::vector<std::vector<uint64_t>> walks;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> per_rank;
  for (const WorkerId& id : Workers(plan.world())) {
    auto cursor = plan.Worker(id);
    EXPECT_TRUE(cursor.has_value());
    std::vector<uint64_t> walk;
    EXPECT_EQ(cursor->remaining(), plan.WorkerSamples(id));
    while (auto s = cursor->Next()) walk.push_back(*s);
    EXPECT_EQ(walk.size(), plan.WorkerSamples(id));
    EXPECT_EQ(cursor->taken(), walk.size());
    EXPECT_EQ(cursor->remaining(), 0u);
    per_rank[{id.node, id.rank}] += walk.size();
    walks.push_back(std::move(walk));
  }
  for (const auto& [rank, n] : per_rank) EXPECT_EQ(n, plan.samples_per_rank());
  EXPECT_EQ(plan.samples_per_rank() * Ranks(plan.world()), plan.epoch_samples());
  return walks;
}

uint64_t SpanLength(uint64_t n, uint32_t c, uint32_t node) {
  return (node + uint64_t{1}) * n / c - node * n / c;
}

// Puts every worker's samples back at their position of the padded global order, by the
// documented deal (position i: node i % P, rank (i / P) % R, index t = i / ranks of the rank;
// the rank's batch t / batch goes to worker (t / batch) % W), and checks that GlobalSample
// agrees and that no position is dealt twice or left out.
std::vector<uint64_t> Reconstruct(const EpochPlan& plan, uint32_t batch) {
  const WorldShape& w = plan.world();
  std::vector<uint64_t> global(plan.epoch_samples(), kUnset);
  const auto walks = Walk(plan);
  const auto ids = Workers(w);
  for (size_t x = 0; x < ids.size(); ++x) {
    const WorkerId& id = ids[x];
    for (uint64_t j = 0; j < walks[x].size(); ++j) {
      const uint64_t b = j / batch * w.workers_per_rank + id.worker;
      const uint64_t t = b * batch + j % batch;
      const uint64_t i = (t * w.ranks_per_node + id.rank) * w.nodes + id.node;
      if (i >= global.size() || global[i] != kUnset) {
        ADD_FAILURE() << "position " << i << " dealt twice or outside the epoch";
        return global;
      }
      global[i] = walks[x][j];
    }
  }
  for (uint64_t i = 0; i < global.size(); ++i) {
    if (global[i] == kUnset) {
      ADD_FAILURE() << "position " << i << " dealt to no worker";
      break;
    }
    if (plan.GlobalSample(i) != global[i]) {
      ADD_FAILURE() << "GlobalSample(" << i << ") = " << plan.GlobalSample(i) << ", expected "
                    << global[i];
      break;
    }
  }
  return global;
}

// The canonical sequences behind positions [first, first + order.size()) of the unpadded global
// order, by the documented interleaving (position j of every non-empty canonical node, then
// j + 1): seq[c] lists what node c delivered, from its first position in that range.
std::vector<std::vector<uint64_t>> Canonical(const std::vector<uint64_t>& order, uint64_t n,
                                             uint32_t c, uint64_t first = 0) {
  std::vector<std::vector<uint64_t>> seq(c);
  uint64_t k = 0;
  for (uint64_t j = 0; k < first + order.size(); ++j) {
    for (uint32_t node = 0; node < c && k < first + order.size(); ++node) {
      if (j >= SpanLength(n, c, node)) continue;
      if (k >= first) seq[node].push_back(order[k - first]);
      ++k;
    }
  }
  return seq;
}

// Without drop_last: every dataset sample once in the first N positions, then fewer than
// `ranks` repeats, distinct, each on another rank than its first reading. With drop_last: whole
// world batches, no repeats.
void CheckExactlyOnce(const EpochPlan& plan, const std::vector<uint64_t>& global, bool drop_last,
                      uint32_t batch) {
  const uint64_t n = plan.dataset_samples();
  const uint64_t ranks = Ranks(plan.world());
  if (drop_last) {
    EXPECT_EQ(global.size(), n / (ranks * batch) * ranks * batch);
    std::vector<uint64_t> all = global;
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a duplicate";
    if (!all.empty()) {
      EXPECT_LT(all.back(), n);
    }
    EXPECT_EQ(plan.padding(), 0u);
    return;
  }
  ASSERT_EQ(global.size(), (n + ranks - 1) / ranks * ranks);
  EXPECT_EQ(plan.padding(), global.size() - n);
  EXPECT_LT(plan.padding(), ranks);
  std::vector<uint64_t> originals(global.begin(), global.begin() + static_cast<ptrdiff_t>(n));
  std::vector<uint64_t> first_rank(n);
  for (uint64_t i = 0; i < n; ++i) first_rank[global[i]] = i % ranks;
  std::sort(originals.begin(), originals.end());
  std::vector<uint64_t> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  ASSERT_EQ(originals, expected);
  std::set<uint64_t> repeats;
  for (uint64_t i = n; i < global.size() && n >= ranks; ++i) {
    EXPECT_TRUE(repeats.insert(global[i]).second) << "repeated twice: " << global[i];
    EXPECT_NE(first_rank[global[i]], i % ranks) << "a rank reads " << global[i] << " twice";
  }
}

class EpochPlanTest : public ::testing::TestWithParam<Config> {};

TEST_P(EpochPlanTest, EverySampleExactlyOncePlusDocumentedPadding) {
  const WorldShape shapes[] = {{1, 1, 1}, {2, 2, 3}, {4, 1, 2}, {3, 2, 5}};
  for (const WorldShape& world : shapes) {
    for (const uint32_t batch : {1u, 3u, 8u}) {
      for (const uint64_t total : {1u, 7u, 999u, 4321u}) {
        const std::vector<uint64_t> shards = Shards(total, 500, total);
        // The default C, C = nodes, and C that neither divides the world batch nor the samples.
        for (const uint32_t c : {0u, world.nodes, 7 * world.nodes}) {
          for (const bool drop_last : {false, true}) {
            SCOPED_TRACE(std::to_string(world.nodes) + "x" + std::to_string(world.ranks_per_node) +
                         "x" + std::to_string(world.workers_per_rank) + " batch " +
                         std::to_string(batch) + " samples " + std::to_string(total) + " C " +
                         std::to_string(c) + (drop_last ? " drop_last" : ""));
            const OrderOptions options = Options(GetParam(), batch, c, drop_last);
            const auto plan = MustCreate(shards, options, world);
            ASSERT_NE(plan, nullptr);
            CheckExactlyOnce(*plan, Reconstruct(*plan, batch), drop_last, batch);
          }
        }
      }
    }
  }
}

TEST_P(EpochPlanTest, ShardsStayOnTheirCanonicalNode) {
  // Each canonical node holds a contiguous run of the shard order, so shards x canonical nodes
  // pairs number at most shards + C - 1 (only boundary shards are split).
  const std::vector<uint64_t> shards = Shards(5000, 200, 5);
  const auto plan = MustCreate(shards, Options(GetParam(), 2, 16), {2, 2, 2});
  const auto global = Reconstruct(*plan, 2);
  const auto canon = Canonical({global.begin(), global.begin() + 5000}, 5000, 16);
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t c = 0; c < canon.size(); ++c) {
    EXPECT_EQ(canon[c].size(), SpanLength(5000, 16, c));
    for (const uint64_t s : canon[c]) pairs.insert({plan->Locate(s).first, c});
  }
  EXPECT_LE(pairs.size(), shards.size() + 16 - 1);
  // Node p reads the canonical nodes c with c % 2 == p: disjoint shards but for boundaries and
  // the last 5000 % 16 samples (the tail of the long spans, dealt in global order).
  std::set<std::pair<uint32_t, uint32_t>> node_shards;
  for (uint64_t i = 0; i < 5000; ++i) node_shards.insert({plan->Locate(global[i]).first, i % 2});
  EXPECT_LE(node_shards.size(), shards.size() + 16 - 1 + 5000 % 16);
}

TEST_P(EpochPlanTest, WorkersReadFewShardsAtATime) {
  // 100 shards of 1000 samples, block size 4096; 2 nodes x 2 ranks x 2 workers, batch 32, C = 2:
  // node p reads canonical node p; each worker takes every other batch of its rank, which takes
  // every other position of the node's sequence. How many shards do 256 consecutive samples of a
  // worker touch, on average?
  const std::vector<uint64_t> shards(100, 1000);
  OrderOptions options = Options(GetParam(), 32, 2);
  options.shuffle_block_size = 4096;
  const auto plan = MustCreate(shards, options, {2, 2, 2});
  double sum = 0;
  uint64_t windows = 0;
  for (const auto& walk : Walk(*plan)) {
    for (size_t begin = 0; begin + 256 <= walk.size(); begin += 256, ++windows) {
      std::set<uint32_t> touched;
      for (size_t i = begin; i < begin + 256; ++i) touched.insert(plan->Locate(walk[i]).first);
      sum += static_cast<double>(touched.size());
    }
  }
  const double average = sum / static_cast<double>(windows);
  // 256 samples span 1024 positions of the canonical sequence: about 2 shards in order, and
  // a block's worth (about 5 shards of 1000) at most for the block shuffles.
  if (!GetParam().shuffle || GetParam().algo == ShuffleAlgo::kPy1s) {
    EXPECT_LE(average, 3.0);
  } else if (GetParam().algo == ShuffleAlgo::kNaive) {
    EXPECT_GE(average, 40.0);  // 256 draws from the node's 50 shards
  } else {
    EXPECT_LE(average, 8.0);
  }
  RecordProperty("average_distinct_shards", std::to_string(average));
}

TEST_P(EpochPlanTest, Deterministic) {
  const std::vector<uint64_t> shards = Shards(3000, 300, 6);
  const OrderOptions options = Options(GetParam(), 4, 8);
  const WorldShape world{2, 2, 2};
  const auto a = Walk(*MustCreate(shards, options, world, 1));
  EXPECT_EQ(a, Walk(*MustCreate(shards, options, world, 1)));
  const auto next_epoch = Walk(*MustCreate(shards, options, world, 2));
  OrderOptions other_seed = options;
  other_seed.seed = 18;
  const auto reseeded = Walk(*MustCreate(shards, other_seed, world, 1));
  if (GetParam().shuffle) {
    EXPECT_NE(a, next_epoch);
    EXPECT_NE(a, reseeded);
    // Not just a little: most positions change.
    uint64_t same = 0, count = 0;
    for (size_t w = 0; w < a.size(); ++w) {
      for (size_t j = 0; j < a[w].size(); ++j, ++count) same += a[w][j] == next_epoch[w][j];
    }
    EXPECT_LT(same * 10, count);
  } else {
    EXPECT_EQ(a, next_epoch);
    EXPECT_EQ(a, reseeded);
  }
}

TEST_P(EpochPlanTest, TheGlobalOrderDoesNotDependOnTheWorld) {
  const std::vector<uint64_t> shards = Shards(999, 100, 7);
  struct Shape {
    WorldShape world;
    uint32_t batch;
  };
  const Shape shapes[] = {{{1, 2, 2}, 2}, {{2, 1, 4}, 1}, {{4, 2, 1}, 1},  {{8, 1, 1}, 1},
                          {{2, 2, 3}, 2}, {{1, 1, 1}, 8}, {{16, 1, 1}, 5}, {{3, 1, 2}, 7}};
  std::vector<uint64_t> first;
  for (const Shape& s : shapes) {
    const auto plan = MustCreate(shards, Options(GetParam(), s.batch, 8), s.world);
    ASSERT_EQ(plan->num_canonical_nodes(), 8u);
    auto global = Reconstruct(*plan, s.batch);
    global.resize(999);
    if (first.empty()) first = global;
    EXPECT_EQ(global, first) << s.world.nodes << " nodes";
  }
}

TEST_P(EpochPlanTest, ResumesExactlyOnTheSameAndOtherShapes) {
  const std::vector<uint64_t> shards = Shards(999, 100, 8);
  const uint32_t kC = 8;
  const WorldShape first{2, 2, 3};
  auto full = Reconstruct(*MustCreate(shards, Options(GetParam(), 2, kC), first), 2);
  full.resize(999);  // the unpadded global order
  struct Shape {
    WorldShape world;
    uint32_t batch;
  };
  const Shape resumed_shapes[] = {{first, 2}, {{4, 1, 2}, 1}, {{1, 1, 1}, 8}, {{3, 1, 1}, 3}};
  for (const bool drop_last : {false, true}) {
    for (uint64_t k = 0; k <= 1000; k += k < 990 ? 37 : 1) {
      for (const Shape& s : resumed_shapes) {
        SCOPED_TRACE("resume_from " + std::to_string(k) + " on " + std::to_string(s.world.nodes) +
                     " nodes" + (drop_last ? " drop_last" : ""));
        const auto resumed =
            MustCreate(shards, Options(GetParam(), s.batch, kC, drop_last), s.world, 3, k);
        ASSERT_NE(resumed, nullptr);
        const auto rest = Reconstruct(*resumed, s.batch);
        const uint64_t done = std::min<uint64_t>(k, 999);
        const uint64_t left = 999 - done;
        const uint64_t ranks = Ranks(s.world);
        // The resumed plan continues the global order where it stopped...
        const uint64_t fresh = std::min<uint64_t>(rest.size(), left);
        ASSERT_TRUE(std::equal(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(fresh),
                               full.begin() + static_cast<ptrdiff_t>(done)));
        if (drop_last) {
          EXPECT_EQ(rest.size(), left / (ranks * s.batch) * ranks * s.batch);
        } else {
          // ... to its end, padded to whole ranks with what it read itself.
          EXPECT_EQ(rest.size(), (left + ranks - 1) / ranks * ranks);
          for (uint64_t i = left; i < rest.size(); ++i) {
            EXPECT_TRUE(std::find(full.begin() + static_cast<ptrdiff_t>(done), full.end(),
                                  rest[i]) != full.end());
          }
        }
      }
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<Config>& param) {
  return ConfigName(param.param);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, EpochPlanTest, ::testing::ValuesIn(kConfigs), ParamName);

TEST(EpochPlan, CursorPeekTakenRemainingAndCopies) {
  const std::vector<uint64_t> shards = Shards(5000, 400, 9);
  OrderOptions options = Options({true, ShuffleAlgo::kPy1e}, 4);
  const auto plan = MustCreate(shards, options, {2, 2, 2});
  auto cursor = *plan->Worker({1, 0, 1});
  const uint64_t total = plan->WorkerSamples({1, 0, 1});
  ASSERT_GT(total, 150u);
  std::vector<uint64_t> ahead;
  for (uint64_t k = 0; k < total; ++k) ahead.push_back(*cursor.Peek(k));
  EXPECT_FALSE(cursor.Peek(total).has_value());
  for (uint64_t j = 0; j < 100; ++j) ASSERT_EQ(*cursor.Next(), ahead[j]);
  EXPECT_EQ(cursor.taken(), 100u);
  EXPECT_EQ(cursor.remaining(), total - 100);
  EXPECT_EQ(*cursor.Peek(5), ahead[105]);
  // A copy continues from the same place, independently.
  WorkerCursor copy = cursor;
  for (uint64_t j = 100; j < 150; ++j) ASSERT_EQ(*copy.Next(), ahead[j]);
  EXPECT_EQ(cursor.taken(), 100u);
  for (uint64_t j = 100; j < total; ++j) ASSERT_EQ(*cursor.Next(), ahead[j]);
  EXPECT_FALSE(cursor.Next().has_value());
  EXPECT_FALSE(cursor.Peek(0).has_value());
  // Assigning a cursor of another plan drops the blocks of the first.
  const auto other = MustCreate(shards, options, {2, 2, 2}, 4);
  WorkerCursor fresh = *other->Worker({1, 0, 1});
  const uint64_t first_of_other = *fresh.Peek(0);
  copy = fresh;
  EXPECT_EQ(*copy.Next(), first_of_other);
  // The private path of the plan agrees with the cursor.
  EXPECT_EQ(plan->GlobalSample(0), plan->GlobalSample(0));
}

TEST(EpochPlan, WorkerOutsideTheWorldIsAnError) {
  const auto plan = MustCreate({10, 10}, Options({false, ShuffleAlgo::kPy1e}, 1), {2, 1, 2});
  auto cursor = plan->Worker({2, 0, 0});
  ASSERT_FALSE(cursor.has_value());
  EXPECT_EQ(cursor.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(cursor.error().message(), HasSubstr("node 2"));
  EXPECT_FALSE(plan->Worker({0, 1, 0}).has_value());
  EXPECT_FALSE(plan->Worker({0, 0, 2}).has_value());
}

TEST(EpochPlan, LocateAndSizes) {
  const auto plan = MustCreate({3, 0, 5, 2}, Options({true, ShuffleAlgo::kPy1b}, 1, 2), {1, 1, 2});
  EXPECT_EQ(plan->dataset_samples(), 10u);
  EXPECT_EQ(plan->num_canonical_nodes(), 2u);
  EXPECT_EQ(plan->epoch_samples(), 10u);
  EXPECT_EQ(plan->samples_per_rank(), 10u);
  EXPECT_EQ(plan->WorkerSamples({0, 0, 0}), 5u);
  EXPECT_EQ(plan->WorkerSamples({0, 0, 1}), 5u);
  EXPECT_EQ(plan->Locate(0), (std::pair<uint32_t, uint64_t>{0, 0}));
  EXPECT_EQ(plan->Locate(3), (std::pair<uint32_t, uint64_t>{2, 0}));
  EXPECT_EQ(plan->Locate(7), (std::pair<uint32_t, uint64_t>{2, 4}));
  EXPECT_EQ(plan->Locate(9), (std::pair<uint32_t, uint64_t>{3, 1}));
}

TEST(EpochPlan, EmptyEpochs) {
  // drop_last with fewer samples than ranks, and a plan resumed at (or past) its end.
  const Config c{true, ShuffleAlgo::kPy1e};
  const auto tiny = MustCreate({1}, Options(c, 1, 0, true), {3, 1, 1});
  EXPECT_EQ(tiny->epoch_samples(), 0u);
  EXPECT_FALSE(tiny->Worker({2, 0, 0})->Next().has_value());
  // Without drop_last one sample is read by every rank.
  const auto one = MustCreate({1}, Options(c, 1, 5), {3, 1, 1});
  EXPECT_EQ(one->epoch_samples(), 3u);
  EXPECT_EQ(one->padding(), 2u);
  for (uint32_t node = 0; node < 3; ++node) EXPECT_EQ(*one->Worker({node, 0, 0})->Next(), 0u);
  const auto plan = MustCreate({50, 50}, Options(c, 2), {2, 1, 1});
  const auto done = MustCreate({50, 50}, Options(c, 2), {2, 1, 1}, 3, plan->epoch_samples());
  EXPECT_EQ(done->epoch_samples(), 0u);
  EXPECT_EQ(done->Worker({0, 0, 0})->remaining(), 0u);
  EXPECT_EQ(MustCreate({50, 50}, Options(c, 2), {2, 1, 1}, 3, 1000)->epoch_samples(), 0u);
}

TEST(EpochPlan, BadArgumentsNameTheNumbers) {
  const std::vector<uint64_t> shards = {100, 100};
  const Config c{true, ShuffleAlgo::kPy1e};
  auto expect_error = [&](const OrderOptions& o, const WorldShape& w, uint64_t resume,
                          const std::string& needle) {
    auto plan = EpochPlan::Create(shards, o, w, 0, resume);
    ASSERT_FALSE(plan.has_value()) << needle;
    EXPECT_EQ(plan.error().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(plan.error().message(), HasSubstr(needle));
  };
  expect_error(Options(c, 1), {1, 0, 1}, 0, "1 nodes x 0 ranks x 1 workers");
  expect_error(Options(c, 0), {1, 1, 1}, 0, "batch_size");
  // Any C is a valid order (Mosaic's divisibility rule for the first run is the Python
  // binding's): C neither a multiple nor a divisor of the nodes, larger than the dataset.
  for (const uint32_t any_c : {3u, 4u, 512u}) {
    EXPECT_TRUE(EpochPlan::Create(shards, Options(c, 3, any_c), {2, 1, 1}, 0, 6).has_value());
  }
  OrderOptions no_blocks = Options(c, 1);
  no_blocks.shuffle_block_size = 0;
  expect_error(no_blocks, {1, 1, 1}, 0, "shuffle_block_size = 0");
  // Without shuffle the block size does not matter.
  no_blocks.shuffle = false;
  EXPECT_TRUE(EpochPlan::Create(shards, no_blocks, {1, 1, 1}, 0).has_value());
}

TEST(ShuffleAlgo, ParseAndName) {
  for (const char* name : {"naive", "py1s", "py1b", "py1br", "py1e"}) {
    auto algo = ParseShuffleAlgo(name);
    ASSERT_TRUE(algo.has_value()) << name;
    EXPECT_EQ(ShuffleAlgoName(*algo), name);
  }
  auto bad = ParseShuffleAlgo("py2");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.error().message(), HasSubstr("\"py2\""));
  EXPECT_THAT(bad.error().message(), HasSubstr("naive, py1s, py1b, py1br, py1e"));
}

// The orders are part of the on-disk contract: a checkpoint taken with one ferry version resumes
// with another only if both compute the same order. Changing any of these hashes is a breaking
// change to be made on purpose (and noted in the changelog).
TEST(EpochPlan, OrdersAreStableAcrossVersions) {
  const std::vector<uint64_t> shards = Shards(20000, 700, 11);
  std::map<std::string, uint64_t> hashes;
  for (const Config& config : kConfigs) {
    OrderOptions options = Options(config, 4);
    options.shuffle_block_size = 2000;
    const auto plan = MustCreate(shards, options, {2, 2, 2}, 5);
    uint64_t hash = 0xcbf29ce484222325;  // FNV-1a over every worker's sequence
    for (const auto& walk : Walk(*plan)) {
      for (const uint64_t s : walk) hash = (hash ^ s) * 0x100000001b3;
    }
    hashes[ConfigName(config)] = hash;
  }
  const std::map<std::string, uint64_t> expected = {
      {"naive", 0x03f2fc1f540382bf}, {"no_shuffle", 0x591a5ca93f6f1d45},
      {"py1b", 0xe295a470822ed3bd},  {"py1br", 0x2351a3c43de5d19b},
      {"py1e", 0x0320624b411a4525},  {"py1s", 0x09e4f90621cd5b23},
  };
  for (const auto& [name, hash] : hashes) {
    EXPECT_EQ(hash, expected.at(name)) << name << " 0x" << std::hex << hash;
  }
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// Which shards a node reads does not change between epochs (its cache keeps serving it), while
// the order it reads them in does.
TEST(EpochPlan, NodesKeepTheirShardsAcrossEpochs) {
  std::vector<uint64_t> shards(40, 250);
  OrderOptions options;
  options.shuffle = true;
  options.num_canonical_nodes = 4;
  const WorldShape world{4, 1, 1};
  auto shards_of = [&](uint64_t epoch, uint32_t node) {
    auto plan = EpochPlan::Create(shards, options, world, epoch).value();
    auto cursor = plan->Worker({node, 0, 0}).value();
    std::set<uint32_t> out;
    std::vector<uint64_t> order;
    while (auto s = cursor.Next()) {
      out.insert(plan->Locate(*s).first);
      order.push_back(*s);
    }
    return std::make_pair(out, order);
  };
  for (uint32_t node = 0; node < 4; ++node) {
    const auto [shards0, order0] = shards_of(0, node);
    const auto [shards1, order1] = shards_of(1, node);
    EXPECT_EQ(shards0, shards1) << "node " << node;
    EXPECT_NE(order0, order1) << "node " << node;
  }
}

}  // namespace
}  // namespace ferry
