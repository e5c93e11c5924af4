// Tests of the whole epoch plan against its documented model (include/ferry/stream/epoch_plan.h):
// every sample exactly once plus the documented padding, for many world shapes, batch sizes,
// dataset sizes and every algorithm; determinism; canonical sequences independent of the world
// shape; exact resumption on the same and on another shape; cursor behaviour; errors.
//
// The dealing rule is re-derived here from the documentation (not from partition.cc), so each
// worker's samples can be put back into the canonical sequences they came from.
#include "ferry/stream/epoch_plan.h"

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

// Every worker's sequence, through cursors, in Workers() order.
std::vector<std::vector<uint64_t>> Walk(const EpochPlan& plan) {
  std::vector<std::vector<uint64_t>> walks;
  for (const WorkerId& id : Workers(plan.world())) {
    auto cursor = plan.Worker(id);
    EXPECT_TRUE(cursor.has_value());
    std::vector<uint64_t> walk;
    EXPECT_EQ(cursor->remaining(), plan.samples_per_worker());
    while (auto s = cursor->Next()) walk.push_back(*s);
    EXPECT_EQ(walk.size(), plan.samples_per_worker());
    EXPECT_EQ(cursor->taken(), plan.samples_per_worker());
    EXPECT_EQ(cursor->remaining(), 0u);
    walks.push_back(std::move(walk));
  }
  return walks;
}

uint64_t SpanLength(uint64_t n, uint32_t c, uint32_t node) {
  return (node + uint64_t{1}) * n / c - node * n / c;
}

// What each canonical node delivered: seq[c][k] is position `first + k` of its padded sequence.
struct Canon {
  uint64_t first = 0;
  std::vector<std::vector<uint64_t>> seq;
};

// Puts every worker's samples back where the documented deal says they came from, and checks
// that GlobalSample follows the documented global order over the same positions.
Canon Reconstruct(const EpochPlan& plan, uint32_t batch, uint64_t resume_from) {
  const WorldShape& w = plan.world();
  const uint32_t c = plan.num_canonical_nodes();
  const uint64_t world_batch = uint64_t{w.nodes} * w.ranks_per_node * w.workers_per_rank * batch;
  const uint64_t unit = world_batch / c;
  const uint64_t rounds = plan.samples_per_worker() / batch;
  EXPECT_EQ(plan.epoch_samples(), rounds * world_batch);
  Canon canon;
  canon.first = resume_from / c;
  canon.seq.assign(c, std::vector<uint64_t>(rounds * unit, kUnset));
  const auto walks = Walk(plan);
  const auto ids = Workers(w);
  for (size_t i = 0; i < ids.size(); ++i) {
    const WorkerId& id = ids[i];
    for (uint64_t j = 0; j < walks[i].size(); ++j) {
      // Batch q of the node's slice goes to rank q % ranks, worker q / ranks.
      const uint64_t q = uint64_t{id.worker} * w.ranks_per_node + id.rank;
      const uint64_t offset = q * batch + j % batch;
      const uint64_t node = id.node * (c / w.nodes) + offset / unit;
      const uint64_t pos = (j / batch) * unit + offset % unit;
      uint64_t& slot = canon.seq[node][pos];
      if (slot != kUnset) {
        ADD_FAILURE() << "dealt twice: canonical " << node << " position " << pos;
        return canon;
      }
      slot = walks[i][j];
    }
  }
  for (uint64_t i = 0; i < plan.epoch_samples(); ++i) {
    const uint64_t node = i % world_batch / unit;
    const uint64_t pos = i / world_batch * unit + i % unit;
    if (plan.GlobalSample(i) != canon.seq[node][pos]) {
      ADD_FAILURE() << "GlobalSample(" << i << ") = " << plan.GlobalSample(i) << ", expected "
                    << canon.seq[node][pos];
      break;
    }
  }
  return canon;
}

// Every dataset sample once in the first SpanLength positions of the canonical sequences, the
// rest of each sequence repeating it from its start (padding); or, with drop_last, no repeats
// and only the rounds the shortest sequence fills.
void CheckExactlyOnce(const EpochPlan& plan, const Canon& canon, bool drop_last, uint64_t unit) {
  const uint64_t n = plan.dataset_samples();
  const uint32_t c = plan.num_canonical_nodes();
  ASSERT_EQ(canon.first, 0u);
  if (drop_last) {
    EXPECT_EQ(plan.samples_per_worker() * plan.world().workers(), (n / c) / unit * unit * c);
    std::vector<uint64_t> all;
    for (const auto& seq : canon.seq) all.insert(all.end(), seq.begin(), seq.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a duplicate";
    if (!all.empty()) {
      EXPECT_LT(all.back(), n);
    }
    return;
  }
  const uint64_t longest = (n + c - 1) / c;
  EXPECT_EQ(canon.seq[0].size(), (longest + unit - 1) / unit * unit);
  std::vector<uint64_t> originals;
  uint64_t padding = 0;
  for (uint32_t node = 0; node < c; ++node) {
    const auto& seq = canon.seq[node];
    const uint64_t length = SpanLength(n, c, node);
    ASSERT_GE(seq.size(), length);
    originals.insert(originals.end(), seq.begin(), seq.begin() + length);
    for (uint64_t pos = length; pos < seq.size(); ++pos) {
      if (seq[pos] != seq[pos % length]) FAIL() << "padding of canonical " << node << " at " << pos;
      ++padding;
    }
  }
  EXPECT_EQ(padding, plan.epoch_samples() - n);
  std::sort(originals.begin(), originals.end());
  std::vector<uint64_t> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  ASSERT_EQ(originals, expected);
}

class EpochPlanTest : public ::testing::TestWithParam<Config> {};

TEST_P(EpochPlanTest, EverySampleExactlyOncePlusDocumentedPadding) {
  const WorldShape shapes[] = {{1, 1, 1}, {2, 2, 3}, {4, 1, 2}, {3, 2, 5}};
  for (const WorldShape& world : shapes) {
    for (const uint32_t batch : {1u, 3u, 8u}) {
      for (const uint64_t total : {1u, 7u, 999u, 12345u}) {
        const std::vector<uint64_t> shards = Shards(total, 500, total);
        // The default C (small units), and C = nodes (units of whole node slices).
        for (const uint32_t c : {0u, world.nodes}) {
          for (const bool drop_last : {false, true}) {
            SCOPED_TRACE(std::to_string(world.nodes) + "x" + std::to_string(world.ranks_per_node) +
                         "x" + std::to_string(world.workers_per_rank) + " batch " +
                         std::to_string(batch) + " samples " + std::to_string(total) + " C " +
                         std::to_string(c) + (drop_last ? " drop_last" : ""));
            const OrderOptions options = Options(GetParam(), batch, c, drop_last);
            if (!drop_last && total < world.nodes) {
              // Fewer samples than canonical nodes: nothing to pad an empty node with.
              auto plan = EpochPlan::Create(shards, options, world, 3);
              ASSERT_FALSE(plan.has_value());
              EXPECT_EQ(plan.error().code(), StatusCode::kInvalidArgument);
              continue;
            }
            const auto plan = MustCreate(shards, options, world);
            ASSERT_NE(plan, nullptr);
            EXPECT_EQ(plan->num_canonical_nodes() % world.nodes, 0u);
            const uint64_t world_batch = uint64_t{world.workers()} * batch;
            ASSERT_EQ(world_batch % plan->num_canonical_nodes(), 0u);
            const Canon canon = Reconstruct(*plan, batch, 0);
            CheckExactlyOnce(*plan, canon, drop_last, world_batch / plan->num_canonical_nodes());
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
  const Canon canon = Reconstruct(*plan, 2, 0);
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t c = 0; c < canon.seq.size(); ++c) {
    for (const uint64_t s : canon.seq[c]) pairs.insert({plan->Locate(s).first, c});
  }
  EXPECT_LE(pairs.size(), shards.size() + 16 - 1);
}

TEST_P(EpochPlanTest, WorkersReadFewShardsAtATime) {
  // 100 shards of 1000 samples, block size 4096; 2 nodes x 2 ranks x 2 workers, batch 32, C = 2:
  // each worker reads 32 of every 128 positions of its node's canonical sequence. How many
  // shards do 256 consecutive samples of a worker touch, on average?
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
  const OrderOptions options = Options(GetParam(), 4);
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

TEST_P(EpochPlanTest, CanonicalSequencesDoNotDependOnTheWorld) {
  const std::vector<uint64_t> shards = Shards(999, 100, 7);
  struct Shape {
    WorldShape world;
    uint32_t batch;
  };
  const Shape shapes[] = {{{1, 2, 2}, 2}, {{2, 1, 4}, 1}, {{4, 2, 1}, 1},
                          {{8, 1, 1}, 1}, {{2, 2, 3}, 2}, {{1, 1, 1}, 8}};
  std::vector<Canon> canons;
  for (const Shape& s : shapes) {
    const auto plan = MustCreate(shards, Options(GetParam(), s.batch, 8), s.world);
    ASSERT_EQ(plan->num_canonical_nodes(), 8u);
    canons.push_back(Reconstruct(*plan, s.batch, 0));
  }
  const uint64_t longest = (999 + 7) / 8;
  for (size_t i = 1; i < canons.size(); ++i) {
    for (uint32_t c = 0; c < 8; ++c) {
      const auto& a = canons[0].seq[c];
      const auto& b = canons[i].seq[c];
      const size_t common = std::min(a.size(), b.size());
      ASSERT_GE(common, longest);
      EXPECT_TRUE(std::equal(a.begin(), a.begin() + common, b.begin()))
          << "shape " << i << " canonical " << c;
    }
  }
}

TEST_P(EpochPlanTest, ResumesExactlyOnTheSameAndOtherShapes) {
  const std::vector<uint64_t> shards = Shards(999, 100, 8);
  const uint32_t kC = 8;
  const WorldShape first{2, 2, 3};  // batch 2: world batch 24, unit 3
  // The canonical sequences do not depend on drop_last: take them whole, padded.
  const Canon full = Reconstruct(*MustCreate(shards, Options(GetParam(), 2, kC), first), 2, 0);
  for (const bool drop_last : {false, true}) {
    const auto plan = MustCreate(shards, Options(GetParam(), 2, kC, drop_last), first);
    std::vector<uint64_t> global(plan->epoch_samples());
    for (uint64_t i = 0; i < global.size(); ++i) global[i] = plan->GlobalSample(i);
    // The uninterrupted padded sequence of node c, at any position.
    auto at = [&](uint32_t c, uint64_t pos) { return full.seq[c][pos % SpanLength(999, kC, c)]; };

    struct Shape {
      WorldShape world;
      uint32_t batch;
    };
    const Shape resumed_shapes[] = {{first, 2}, {{4, 1, 2}, 1}, {{1, 1, 1}, 8}, {{8, 1, 1}, 3}};
    // Every other world batch, and the end.
    std::vector<uint64_t> resume_points;
    for (uint64_t k = 0; k < global.size(); k += 48) resume_points.push_back(k);
    resume_points.push_back(global.size());
    for (const uint64_t k : resume_points) {
      const uint64_t done = k / kC;
      for (const Shape& s : resumed_shapes) {
        SCOPED_TRACE("resume_from " + std::to_string(k) + " on " + std::to_string(s.world.nodes) +
                     " nodes" + (drop_last ? " drop_last" : ""));
        const auto resumed =
            MustCreate(shards, Options(GetParam(), s.batch, kC, drop_last), s.world, 3, k);
        ASSERT_NE(resumed, nullptr);
        const Canon rest = Reconstruct(*resumed, s.batch, k);
        std::vector<uint64_t> seen(global.begin(), global.begin() + k);
        std::vector<uint64_t> expected;
        for (uint32_t c = 0; c < kC; ++c) {
          // The first k samples were positions [0, done) of every canonical node...
          for (uint64_t pos = 0; pos < done; ++pos) expected.push_back(at(c, pos));
          // ... and the resumed plan continues each one where it stopped.
          for (uint64_t i = 0; i < rest.seq[c].size(); ++i) {
            if (rest.seq[c][i] != at(c, done + i)) FAIL() << "canonical " << c << " at " << i;
            seen.push_back(rest.seq[c][i]);
            expected.push_back(at(c, done + i));
          }
          if (!drop_last) {
            EXPECT_GE(done + rest.seq[c].size(), SpanLength(999, kC, c));
          }
        }
        std::sort(seen.begin(), seen.end());
        std::sort(expected.begin(), expected.end());
        EXPECT_EQ(seen, expected);
        if (s.world == first) {
          // Same shape: together exactly the uninterrupted epoch.
          std::vector<uint64_t> whole = global;
          std::sort(whole.begin(), whole.end());
          EXPECT_EQ(seen, whole);
        }
        if (drop_last) {
          EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "a duplicate";
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
  const uint64_t total = plan->samples_per_worker();
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
  EXPECT_EQ(plan->samples_per_worker(), 5u);
  EXPECT_EQ(plan->Locate(0), (std::pair<uint32_t, uint64_t>{0, 0}));
  EXPECT_EQ(plan->Locate(3), (std::pair<uint32_t, uint64_t>{2, 0}));
  EXPECT_EQ(plan->Locate(7), (std::pair<uint32_t, uint64_t>{2, 4}));
  EXPECT_EQ(plan->Locate(9), (std::pair<uint32_t, uint64_t>{3, 1}));
}

TEST(EpochPlan, EmptyEpochs) {
  // drop_last with fewer samples than canonical nodes, and a plan resumed at its end.
  const Config c{true, ShuffleAlgo::kPy1e};
  const auto tiny = MustCreate({1}, Options(c, 1, 0, true), {3, 1, 1});
  EXPECT_EQ(tiny->epoch_samples(), 0u);
  EXPECT_FALSE(tiny->Worker({2, 0, 0})->Next().has_value());
  const auto plan = MustCreate({50, 50}, Options(c, 2), {2, 1, 1});
  const auto done = MustCreate({50, 50}, Options(c, 2), {2, 1, 1}, 3, plan->epoch_samples());
  EXPECT_EQ(done->epoch_samples(), 0u);
  EXPECT_EQ(done->Worker({0, 0, 0})->remaining(), 0u);
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
  expect_error(Options(c, 2, 3), {2, 1, 1}, 0,
               "num_canonical_nodes = 3 is not a multiple of "
               "nodes = 2");
  expect_error(Options(c, 3, 4), {2, 1, 1}, 0,
               "= 6 samples) is not divisible by "
               "num_canonical_nodes = 4");
  expect_error(Options(c, 2, 4), {2, 1, 1}, 6,
               "resume_from = 6 is not a multiple of "
               "num_canonical_nodes = 4");
  expect_error(Options(c, 512, 512), {1, 1, 1}, 0,
               "200 samples, fewer than num_canonical_nodes = 512");
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
      {"naive", 0x5e455332401ec72d}, {"no_shuffle", 0xd98db88ec209ae05},
      {"py1b", 0x07a029b1786ff475},  {"py1br", 0xcbaa63b546bb8899},
      {"py1e", 0x1ababe239f888dc9},  {"py1s", 0xffefe9c60e47be61},
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
