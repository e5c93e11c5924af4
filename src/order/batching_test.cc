// EpochPlan with batching methods other than random (include/ferry/order/epoch_plan.h, step 5):
// what every device's batch of every training step holds, walked through the workers' cursors
// as a DataLoader reads them, for several world shapes, batch sizes and shuffles; exact counts;
// one stream; resumption; epochs; errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ferry/order/epoch_plan.h"
#include "order/batch_composition.h"
#include "order/shard_sizes_testutil.h"

namespace ferry {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Three streams of distinguishable samples: stream s holds ids [begin[s], begin[s + 1]).
struct Streams {
  std::vector<uint64_t> shards;
  std::vector<StreamShards> groups;
  std::vector<uint64_t> samples;
  std::vector<uint64_t> begin{0};

  explicit Streams(const std::vector<uint64_t>& sizes) {
    uint64_t total = 0;
    for (uint64_t n : sizes) total += n;
    for (size_t s = 0; s < sizes.size(); ++s) {
      const auto own = testing::RandomShardsAddingUpTo(sizes[s], 13, s + 1);
      shards.insert(shards.end(), own.begin(), own.end());
      groups.push_back({.shards = own.size(),
                        .proportion = static_cast<double>(sizes[s]) / static_cast<double>(total)});
      samples.push_back(sizes[s]);
      begin.push_back(begin.back() + sizes[s]);
    }
  }
  uint32_t StreamOf(uint64_t id) const {
    uint32_t s = 0;
    while (id >= begin[s + 1]) ++s;
    return s;
  }
};

OrderOptions Options(BatchingMethod method, uint32_t batch, bool shuffle = true,
                     ShuffleAlgo algo = ShuffleAlgo::kPy1e) {
  OrderOptions o;
  o.shuffle = shuffle;
  o.algo = algo;
  o.seed = 5;
  o.shuffle_block_size = 40;
  o.batch_size = batch;
  o.batching = method;
  return o;
}

std::shared_ptr<const EpochPlan> MustCreate(const Streams& st, const OrderOptions& options,
                                            const WorldShape& world, uint64_t epoch = 1,
                                            uint64_t resume_from = 0) {
  auto plan = EpochPlan::Create(st.shards, options, world, epoch, resume_from, st.groups);
  EXPECT_TRUE(plan.has_value()) << plan.status().ToString();
  return plan.has_value() ? *plan : nullptr;
}

// steps[t][d]: the batch device d (node + P x rank) reads at training step t, as a DataLoader
// takes them from the rank's workers (round robin from worker 0). Every rank reads as many.
std::vector<std::vector<std::vector<uint64_t>>> Steps(const EpochPlan& plan, uint32_t batch) {
  const WorldShape& w = plan.world();
  std::vector<std::vector<std::vector<uint64_t>>> steps;
  for (uint32_t rank = 0; rank < w.ranks_per_node; ++rank) {
    for (uint32_t node = 0; node < w.nodes; ++node) {
      std::vector<std::vector<std::vector<uint64_t>>> batches(w.workers_per_rank);
      uint64_t read = 0;
      for (uint32_t k = 0; k < w.workers_per_rank; ++k) {
        WorkerCursor cursor = *plan.Worker({node, rank, k});
        while (auto id = cursor.Next()) {
          if (batches[k].empty() || batches[k].back().size() == batch) batches[k].emplace_back();
          batches[k].back().push_back(*id);
          ++read;
        }
      }
      EXPECT_EQ(read, plan.samples_per_rank());
      std::vector<std::vector<uint64_t>> sequence;
      for (size_t t = 0;; ++t) {
        auto& mine = batches[t % w.workers_per_rank];
        if (t / w.workers_per_rank >= mine.size()) break;
        sequence.push_back(mine[t / w.workers_per_rank]);
      }
      if (steps.size() < sequence.size()) steps.resize(sequence.size());
      for (size_t t = 0; t < sequence.size(); ++t) steps[t].push_back(sequence[t]);
    }
  }
  return steps;
}

const WorldShape kWorlds[] = {{1, 1, 1}, {1, 1, 3}, {1, 2, 2}, {2, 2, 1}, {2, 1, 3}};
const std::vector<uint64_t> kSizes = {300, 123, 57};

TEST(Batching, PerStreamEveryStepFromOneStream) {
  const Streams st(kSizes);
  for (const WorldShape& w : kWorlds) {
    for (uint32_t batch : {1u, 4u, 7u}) {
      for (bool shuffle : {false, true}) {
        const auto plan = MustCreate(st, Options(BatchingMethod::kPerStream, batch, shuffle), w);
        const uint64_t ranks = uint64_t{w.nodes} * w.ranks_per_node;
        uint64_t expect = 0;
        for (uint64_t n : st.samples) expect += CeilDiv(n, ranks) / batch * ranks * batch;
        ASSERT_EQ(plan->epoch_samples(), expect);
        EXPECT_EQ(plan->padding(), 0u);
        const auto steps = Steps(*plan, batch);
        ASSERT_EQ(steps.size(), expect / (ranks * batch));
        std::map<uint32_t, std::multiset<uint64_t>> read;
        for (const auto& step : steps) {
          ASSERT_EQ(step.size(), ranks);
          std::set<uint32_t> streams;
          for (const auto& device : step) {
            ASSERT_EQ(device.size(), batch);
            for (uint64_t id : device) {
              streams.insert(st.StreamOf(id));
              read[st.StreamOf(id)].insert(id);
            }
          }
          ASSERT_EQ(streams.size(), 1u) << "a global batch draws from one stream";
        }
        // Each stream: distinct samples but for the padding to whole ranks.
        for (const auto& [s, ids] : read) {
          const std::set<uint64_t> distinct(ids.begin(), ids.end());
          EXPECT_LT(ids.size() - distinct.size(), ranks) << "stream " << s;
        }
      }
    }
  }
}

TEST(Batching, StratifiedEveryStepHoldsEachStreamsShare) {
  const Streams st(kSizes);
  for (const WorldShape& w : kWorlds) {
    for (uint32_t batch : {8u, 11u}) {
      const auto plan = MustCreate(st, Options(BatchingMethod::kStratified, batch), w);
      const uint64_t ranks = uint64_t{w.nodes} * w.ranks_per_node;
      const uint64_t g = ranks * batch;
      std::vector<double> proportions;
      for (const StreamShards& s : st.groups) proportions.push_back(s.proportion);
      const auto parts = *internal_order::StratifiedParts(proportions, g);
      uint64_t batches = UINT64_MAX;
      for (size_t s = 0; s < parts.size(); ++s) {
        batches = std::min(batches, st.samples[s] / parts[s]);
      }
      ASSERT_EQ(plan->epoch_samples(), batches * g);
      std::set<uint64_t> all;
      for (const auto& step : Steps(*plan, batch)) {
        std::vector<uint64_t> counts(parts.size(), 0);
        for (const auto& device : step) {
          std::vector<uint64_t> mine(parts.size(), 0);
          for (uint64_t id : device) {
            ++counts[st.StreamOf(id)];
            ++mine[st.StreamOf(id)];
            EXPECT_TRUE(all.insert(id).second) << "sample " << id << " twice";
          }
          // Spread over the devices: each holds its share of every part within one.
          for (size_t s = 0; s < parts.size(); ++s) {
            EXPECT_LE(mine[s], CeilDiv(parts[s], ranks));
            EXPECT_GE(mine[s], parts[s] / ranks);
          }
        }
        ASSERT_EQ(counts, parts);
      }
    }
  }
}

TEST(Batching, DevicePerStreamEveryDeviceBatchFromOneStream) {
  const Streams st(kSizes);
  for (const WorldShape& w : kWorlds) {
    for (uint32_t batch : {1u, 5u}) {
      const auto plan = MustCreate(st, Options(BatchingMethod::kDevicePerStream, batch), w);
      const uint64_t p = w.nodes;
      uint64_t per_node = 0;
      for (uint64_t n : st.samples) per_node += CeilDiv(n, p) / batch;
      const uint64_t steps_expected = CeilDiv(per_node, w.ranks_per_node);
      ASSERT_EQ(plan->samples_per_rank(), steps_expected * batch);
      std::set<uint32_t> seen_streams;
      const auto steps = Steps(*plan, batch);
      ASSERT_EQ(steps.size(), steps_expected);
      for (const auto& step : steps) {
        for (const auto& device : step) {
          std::set<uint32_t> streams;
          for (uint64_t id : device) streams.insert(st.StreamOf(id));
          ASSERT_EQ(streams.size(), 1u) << "a device batch draws from one stream";
          seen_streams.insert(*streams.begin());
        }
      }
      EXPECT_EQ(seen_streams.size(), 3u);
    }
  }
}

TEST(Batching, GlobalSampleAgreesWithTheCursors) {
  const Streams st(kSizes);
  const WorldShape w{2, 2, 2};
  for (auto method : {BatchingMethod::kPerStream, BatchingMethod::kStratified,
                      BatchingMethod::kDevicePerStream}) {
    const auto plan = MustCreate(st, Options(method, 3), w);
    const uint64_t ranks = 4;
    const auto steps = Steps(*plan, 3);
    for (size_t t = 0; t < steps.size(); ++t) {
      for (uint64_t d = 0; d < ranks; ++d) {
        for (uint64_t b = 0; b < steps[t][d].size(); ++b) {
          // Device d = node + P x rank reads offset b x ranks + d of the global batch.
          ASSERT_EQ(plan->GlobalSample((t * 3 + b) * ranks + d), steps[t][d][b]);
        }
      }
    }
  }
}

TEST(Batching, OneStreamPerStreamIsTheRandomOrderInWholeGlobalBatches) {
  const Streams st({1003});
  for (const WorldShape& w : kWorlds) {
    for (auto algo : {ShuffleAlgo::kPy1e, ShuffleAlgo::kPy1s, ShuffleAlgo::kNaive}) {
      const auto random = MustCreate(st, Options(BatchingMethod::kRandom, 8, true, algo), w);
      const auto per_stream = MustCreate(st, Options(BatchingMethod::kPerStream, 8, true, algo), w);
      const uint64_t g = uint64_t{w.nodes} * w.ranks_per_node * 8;
      ASSERT_EQ(per_stream->epoch_samples(), random->epoch_samples() / g * g);
      for (uint64_t i = 0; i < per_stream->epoch_samples(); ++i) {
        ASSERT_EQ(per_stream->GlobalSample(i), random->GlobalSample(i)) << i;
      }
    }
  }
}

TEST(Batching, ResumptionRestartsAtAWholeGlobalBatch) {
  const Streams st(kSizes);
  const WorldShape w{2, 1, 2};
  for (auto method : {BatchingMethod::kPerStream, BatchingMethod::kStratified,
                      BatchingMethod::kDevicePerStream}) {
    const auto full = MustCreate(st, Options(method, 4), w);
    const uint64_t g = 8;
    for (uint64_t resume : {uint64_t{0}, g, 3 * g + 5, full->epoch_samples()}) {
      const auto resumed = MustCreate(st, Options(method, 4), w, 1, resume);
      const uint64_t from = resume / g * g;
      ASSERT_EQ(resumed->epoch_samples(), full->epoch_samples() - from);
      for (uint64_t i = 0; i < resumed->epoch_samples(); ++i) {
        ASSERT_EQ(resumed->GlobalSample(i), full->GlobalSample(from + i));
      }
    }
  }
}

TEST(Batching, TheStreamsOfStepsChangeWithTheEpochWhenShuffling) {
  const Streams st(kSizes);
  const auto streams_of_steps = [&](bool shuffle, uint64_t epoch) {
    const auto plan = MustCreate(st, Options(BatchingMethod::kPerStream, 4, shuffle), {}, epoch);
    std::vector<uint32_t> out;
    for (uint64_t i = 0; i < plan->epoch_samples(); i += 4) {
      out.push_back(st.StreamOf(plan->GlobalSample(i)));
    }
    return out;
  };
  EXPECT_EQ(streams_of_steps(true, 0), streams_of_steps(true, 0));
  EXPECT_NE(streams_of_steps(true, 0), streams_of_steps(true, 1));
  EXPECT_EQ(streams_of_steps(false, 0), streams_of_steps(false, 1));
}

TEST(Batching, RandomIgnoresTheStreams) {
  const Streams st(kSizes);
  OrderOptions o = Options(BatchingMethod::kRandom, 4);
  const auto with = *EpochPlan::Create(st.shards, o, {2, 1, 1}, 0, 0, st.groups);
  const auto without = *EpochPlan::Create(st.shards, o, {2, 1, 1}, 0);
  ASSERT_EQ(with->epoch_samples(), without->epoch_samples());
  for (uint64_t i = 0; i < with->epoch_samples(); ++i) {
    ASSERT_EQ(with->GlobalSample(i), without->GlobalSample(i));
  }
}

TEST(Batching, ErrorsNameTheStreamAndTheBatch) {
  const Streams st({300, 10});
  auto small = EpochPlan::Create(st.shards, Options(BatchingMethod::kPerStream, 4), {1, 4, 1}, 0, 0,
                                 st.groups);
  ASSERT_FALSE(small.has_value());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(
      small.status().message(),
      AllOf(HasSubstr("stream 1"), HasSubstr("global batch of 16 (batch_size 4 x 4 ranks)")));

  // A stream that gives nothing this epoch (no shards in the mix).
  std::vector<StreamShards> with_empty = st.groups;
  with_empty.push_back({.shards = 0, .proportion = 0});
  for (auto [method, batch] :
       {std::pair{BatchingMethod::kPerStream, 2u}, std::pair{BatchingMethod::kStratified, 16u},
        std::pair{BatchingMethod::kDevicePerStream, 2u}}) {
    auto empty = EpochPlan::Create(st.shards, Options(method, batch), {}, 0, 0, with_empty);
    ASSERT_FALSE(empty.has_value());
    EXPECT_THAT(empty.status().message(), HasSubstr("stream 2"));
  }

  std::vector<StreamShards> wrong = st.groups;
  wrong[1].shards += 1;
  auto mismatch =
      EpochPlan::Create(st.shards, Options(BatchingMethod::kStratified, 4), {}, 0, 0, wrong);
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_THAT(mismatch.status().message(), HasSubstr("the streams own"));
}

}  // namespace
}  // namespace ferry
