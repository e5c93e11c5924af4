// Tests of the interleaving and dealing arithmetic against a brute-force construction of the
// documented model (src/order/partition.h): lists of positions built step by step, compared
// with Partition's O(1) answers; the default C; exact counts; repeats across ranks only.
#include "order/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

namespace ferry::internal_order {
namespace {

using ::testing::HasSubstr;

OrderOptions Options(uint32_t batch, uint32_t c = 0, bool drop_last = false) {
  OrderOptions o;
  o.batch_size = batch;
  o.num_canonical_nodes = c;
  o.drop_last = drop_last;
  return o;
}

uint64_t SpanLength(uint64_t n, uint64_t c, uint64_t node) {
  return (node + 1) * n / c - node * n / c;
}

// The model built literally: the interleaved order, cut at resume_from, padded or cut, dealt.
struct Reference {
  std::vector<CanonicalPosition> global;  // padded
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::vector<CanonicalPosition>> workers;

  Reference(const WorldShape& w, uint32_t batch, uint64_t n, uint32_t c, uint64_t resume,
            bool drop_last) {
    std::vector<CanonicalPosition> order;
    for (uint64_t j = 0; order.size() < n; ++j) {
      for (uint32_t node = 0; node < c; ++node) {
        if (j < SpanLength(n, c, node)) order.push_back({node, j});
      }
    }
    order.erase(order.begin(), order.begin() + static_cast<ptrdiff_t>(std::min(resume, n)));
    const uint64_t m = order.size();
    const uint64_t ranks = uint64_t{w.nodes} * w.ranks_per_node;
    global = order;
    if (drop_last) {
      global.resize(m / (ranks * batch) * ranks * batch);
    } else {
      const uint64_t e = (m + ranks - 1) / ranks * ranks;
      const uint64_t d = e - m;
      const auto sm = static_cast<int64_t>(m);
      for (uint64_t i = m; i < e; ++i) {
        global.push_back(
            order[((static_cast<int64_t>(i - m) - static_cast<int64_t>(d)) % sm + sm) % sm]);
      }
    }
    std::map<std::pair<uint32_t, uint32_t>, std::vector<CanonicalPosition>> rank_seq;
    for (uint64_t i = 0; i < global.size(); ++i) {
      rank_seq[{static_cast<uint32_t>(i % w.nodes),
                static_cast<uint32_t>(i / w.nodes % w.ranks_per_node)}]
          .push_back(global[i]);
    }
    for (auto& [rank, seq] : rank_seq) {
      for (uint64_t t = 0; t < seq.size(); ++t) {
        const auto worker = static_cast<uint32_t>(t / batch % w.workers_per_rank);
        workers[{rank.first, rank.second, worker}].push_back(seq[t]);
      }
    }
  }
};

TEST(DefaultCanonicalNodes, MosaicsRule) {
  OrderOptions o;
  o.algo = ShuffleAlgo::kPy1e;
  EXPECT_EQ(DefaultCanonicalNodes({8, 8, 2}, o), 8u);
  o.algo = ShuffleAlgo::kPy1s;
  EXPECT_EQ(DefaultCanonicalNodes({8, 8, 2}, o), 512u);
  o.algo = ShuffleAlgo::kNaive;
  EXPECT_EQ(DefaultCanonicalNodes({1, 3, 5}, o), 1u);
}

TEST(Partition, AgreesWithTheLiteralModel) {
  const WorldShape shapes[] = {{1, 1, 1}, {1, 1, 3}, {2, 2, 3}, {3, 2, 1}, {4, 1, 2}, {1, 8, 2}};
  for (const WorldShape& w : shapes) {
    for (const uint32_t batch : {1u, 2u, 7u}) {
      for (const uint64_t n : {1u, 5u, 117u, 1003u}) {
        for (const uint32_t c : {1u, 3u, 8u, 64u}) {
          for (const uint64_t resume : {uint64_t{0}, uint64_t{1}, n / 2, n}) {
            for (const bool drop_last : {false, true}) {
              SCOPED_TRACE(::testing::Message()
                           << w.nodes << "x" << w.ranks_per_node << "x" << w.workers_per_rank
                           << " batch " << batch << " n " << n << " C " << c << " resume " << resume
                           << (drop_last ? " drop_last" : ""));
              auto p = Partition::Make(w, Options(batch, c, drop_last), n, resume);
              ASSERT_TRUE(p.has_value()) << p.error().ToString();
              const Reference ref(w, batch, n, c, resume, drop_last);
              ASSERT_EQ(p->epoch_samples(), ref.global.size());
              for (uint64_t i = 0; i < ref.global.size(); ++i) {
                ASSERT_EQ(p->Global(i), ref.global[i]) << "position " << i;
              }
              for (uint32_t node = 0; node < w.nodes; ++node) {
                for (uint32_t rank = 0; rank < w.ranks_per_node; ++rank) {
                  uint64_t rank_total = 0;
                  for (uint32_t k = 0; k < w.workers_per_rank; ++k) {
                    const WorkerId id{node, rank, k};
                    const auto it = ref.workers.find({node, rank, k});
                    const std::vector<CanonicalPosition> none;
                    const auto& expected = it == ref.workers.end() ? none : it->second;
                    ASSERT_EQ(p->WorkerSamples(id), expected.size());
                    for (uint64_t j = 0; j < expected.size(); ++j) {
                      ASSERT_EQ(p->OfWorker(id, j), expected[j]) << "worker " << k << " at " << j;
                    }
                    rank_total += expected.size();
                  }
                  EXPECT_EQ(rank_total, p->samples_per_rank());
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(Partition, EveryRankReadsCeilOfSamplesOverRanks) {
  // Mosaic's len(dataset): ceil(N / ranks) per rank, whatever C, workers and batch are.
  for (const uint64_t n : {117u, 1003u, 9867u}) {
    for (const uint32_t ranks : {1u, 2u, 3u, 8u}) {
      for (const uint32_t c : {0u, 1u, 8u, 64u, 100u}) {
        auto p = Partition::Make({1, ranks, 4}, Options(128, c), n, 0);
        ASSERT_TRUE(p.has_value());
        EXPECT_EQ(p->samples_per_rank(), (n + ranks - 1) / ranks);
        EXPECT_EQ(p->padding(), p->samples_per_rank() * ranks - n);
      }
    }
  }
}

TEST(Partition, RepeatsLandOnOtherRanks) {
  // N = 10 over 4 ranks: 12 positions, 2 repeats; padded position i reads position i - 2.
  auto p = Partition::Make({2, 2, 1}, Options(1, 2), 10, 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->epoch_samples(), 12u);
  EXPECT_EQ(p->padding(), 2u);
  EXPECT_EQ(p->Global(10), p->Global(8));
  EXPECT_EQ(p->Global(11), p->Global(9));
  // Position 10 is node 0 rank 1; position 8 was node 0 rank 0.
  EXPECT_EQ(p->OfWorker({0, 1, 0}, 2), p->Global(10));
  EXPECT_EQ(p->OfWorker({0, 0, 0}, 2), p->Global(8));
}

TEST(Partition, DealsBatchesRoundRobinFromWorkerZero) {
  // One rank, 3 workers, batch 2, 11 samples, C = 1: batches [0,1] [2,3] [4,5] [6,7] [8,9] [10]
  // go to workers 0, 1, 2, 0, 1, 2.
  auto p = Partition::Make({1, 1, 3}, Options(2, 1), 11, 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->WorkerSamples({0, 0, 0}), 4u);
  EXPECT_EQ(p->WorkerSamples({0, 0, 1}), 4u);
  EXPECT_EQ(p->WorkerSamples({0, 0, 2}), 3u);
  const uint64_t expected[3][4] = {{0, 1, 6, 7}, {2, 3, 8, 9}, {4, 5, 10, 0}};
  for (uint32_t k = 0; k < 3; ++k) {
    for (uint64_t j = 0; j < p->WorkerSamples({0, 0, k}); ++j) {
      EXPECT_EQ(p->OfWorker({0, 0, k}, j).position, expected[k][j]);
    }
  }
  // Fewer batches than workers: the last workers read nothing.
  auto few = Partition::Make({1, 1, 8}, Options(64, 1), 117, 0);
  ASSERT_TRUE(few.has_value());
  EXPECT_EQ(few->WorkerSamples({0, 0, 0}), 64u);
  EXPECT_EQ(few->WorkerSamples({0, 0, 1}), 53u);
  EXPECT_EQ(few->WorkerSamples({0, 0, 2}), 0u);
}

TEST(Partition, NodesKeepTheirCanonicalNodesWhenNodesDivideC) {
  auto p = Partition::Make({4, 2, 1}, Options(3, 8), 1000, 0);
  ASSERT_TRUE(p.has_value());
  for (uint32_t node = 0; node < 4; ++node) {
    std::set<uint32_t> canon;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      const WorkerId id{node, rank, 0};
      for (uint64_t j = 0; j < p->WorkerSamples(id); ++j) canon.insert(p->OfWorker(id, j).node);
    }
    EXPECT_EQ(canon, (std::set<uint32_t>{node, node + 4})) << "node " << node;
  }
  EXPECT_EQ(p->NodesPerBatch(), 1u);  // 8 ranks apart: the same canonical node mod 8
}

TEST(Partition, RejectsImpossibleShapesNamingTheNumbers) {
  auto zero = Partition::Make({1, 0, 1}, Options(1), 10, 0);
  ASSERT_FALSE(zero.has_value());
  EXPECT_THAT(zero.error().message(), HasSubstr("1 nodes x 0 ranks x 1 workers"));
  auto batch = Partition::Make({1, 1, 1}, Options(0), 10, 0);
  ASSERT_FALSE(batch.has_value());
  EXPECT_THAT(batch.error().message(), HasSubstr("batch_size"));
  auto huge = Partition::Make({1u << 16, 1u << 16, 1}, Options(1u << 17), 10, 0);
  ASSERT_FALSE(huge.has_value());
  EXPECT_THAT(huge.error().message(), HasSubstr("past 2^48"));
}

}  // namespace
}  // namespace ferry::internal_order
