// The cost of the epoch sample order (Google Benchmark), at the scale the design targets:
// 100 M samples in 10,000 shards, 8 nodes x 8 ranks x 2 workers, batch 32.
//   - BM_CreatePlan: EpochPlan::Create (shard order, prefix sums; nothing per sample).
//   - BM_WalkWorker: one worker's whole epoch through its cursor (781,250 samples), in ns per
//     sample, per algorithm; with the default C = 512 each canonical node feeds one worker, with
//     C = 64 two workers share one, and with C = 8 every node's 16 workers share one canonical
//     node (each builds every block of it but reads 1/16 of it: the worst case of lazy blocks).
//   - Baselines from the same run: materializing the whole epoch as one shuffled array of sample
//     ids, the way a numpy implementation does (BM_BaselineMaterialize: time and 800 MB), and
//     summing one worker's share of such an array once extracted (BM_BaselineReadArray: the
//     floor for any walk).
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "ferry/order/epoch_plan.h"
#include "order/random.h"

namespace ferry {
namespace {

constexpr uint64_t kShards = 10'000;
constexpr uint64_t kPerShard = 10'000;
const WorldShape kWorld{8, 8, 2};

std::vector<uint64_t> ShardSizes() { return std::vector<uint64_t>(kShards, kPerShard); }

OrderOptions Options(ShuffleAlgo algo, bool shuffle = true, uint32_t canonical_nodes = 0) {
  OrderOptions o;
  o.shuffle = shuffle;
  o.algo = algo;
  o.batch_size = 32;
  o.num_canonical_nodes = canonical_nodes;
  return o;
}

void BM_CreatePlan(benchmark::State& state) {
  const std::vector<uint64_t> shards = ShardSizes();
  for (auto _ : state) {
    auto plan = EpochPlan::Create(shards, Options(ShuffleAlgo::kPy1e), kWorld, 1);
    if (!plan.has_value()) state.SkipWithError(plan.status().ToString().c_str());
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_CreatePlan)->Unit(benchmark::kMillisecond);

// Args: algorithm (ShuffleAlgo, or -1 for no shuffle), num_canonical_nodes (0 = default).
void BM_WalkWorker(benchmark::State& state) {
  const bool shuffle = state.range(0) >= 0;
  const auto algo = shuffle ? static_cast<ShuffleAlgo>(state.range(0)) : ShuffleAlgo::kPy1e;
  const auto c = static_cast<uint32_t>(state.range(1));
  auto plan = EpochPlan::Create(ShardSizes(), Options(algo, shuffle, c), kWorld, 1);
  if (!plan.has_value()) {
    state.SkipWithError(plan.status().ToString().c_str());
    return;
  }
  state.SetLabel(std::string(shuffle ? ShuffleAlgoName(algo) : "no shuffle") +
                 ", C=" + std::to_string((*plan)->num_canonical_nodes()));
  uint64_t samples = 0;
  for (auto _ : state) {
    auto cursor = (*plan)->Worker({3, 5, 1}).value();
    uint64_t sum = 0;
    while (auto s = cursor.Next()) sum += *s;
    benchmark::DoNotOptimize(sum);
    samples += cursor.taken();
  }
  state.SetItemsProcessed(static_cast<int64_t>(samples));
  state.counters["per_sample"] = benchmark::Counter(
      static_cast<double>(samples), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WalkWorker)
    ->Args({static_cast<int>(ShuffleAlgo::kPy1e), 0})
    ->Args({static_cast<int>(ShuffleAlgo::kPy1e), 64})
    ->Args({static_cast<int>(ShuffleAlgo::kPy1e), 8})
    ->Args({static_cast<int>(ShuffleAlgo::kPy1b), 0})
    ->Args({static_cast<int>(ShuffleAlgo::kPy1br), 0})
    ->Args({static_cast<int>(ShuffleAlgo::kPy1s), 0})
    ->Args({static_cast<int>(ShuffleAlgo::kNaive), 0})
    ->Args({-1, 0})
    ->Unit(benchmark::kMillisecond);

void BM_BaselineMaterialize(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<uint64_t> ids(kShards * kPerShard);
    std::iota(ids.begin(), ids.end(), uint64_t{0});
    internal_order::Rng rng(1);
    internal_order::Shuffle(std::span<uint64_t>(ids), rng);
    benchmark::DoNotOptimize(ids.data());
  }
}
BENCHMARK(BM_BaselineMaterialize)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_BaselineReadArray(benchmark::State& state) {
  // One worker's share of a materialized order, already extracted: the floor for a walk.
  std::vector<uint64_t> ids(kShards * kPerShard / kWorld.workers());
  std::iota(ids.begin(), ids.end(), uint64_t{0});
  uint64_t samples = 0;
  for (auto _ : state) {
    uint64_t sum = 0;
    for (const uint64_t id : ids) sum += id;
    benchmark::DoNotOptimize(sum);
    samples += ids.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(samples));
  state.counters["per_sample"] = benchmark::Counter(
      static_cast<double>(samples), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_BaselineReadArray)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry

BENCHMARK_MAIN();
