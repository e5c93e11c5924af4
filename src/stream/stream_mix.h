// The samples of one epoch after mixing streams (Mosaic's proportion / repeat / choose), grouped
// into "virtual shards" that the EpochPlan orders: each is one real shard of one stream, whole or
// a subset, so that shuffling keeps shard locality.
//
// Per stream, the number of samples an epoch takes (`choose`) comes from, in order: `choose`;
// `repeat` x the stream's size; `proportion` x epoch_size (proportions are normalized over the
// streams that give one); else the stream's size scaled so all streams sum to epoch_size when
// that is set, else the stream's size. `choose` = k x size + r gives k copies of every shard and
// an r-sample subset drawn shard-wise: whole shards in a seeded random order, then a seeded
// random part of one more shard - so a subset costs no more downloads than its size needs. The
// subset is re-drawn every epoch with kBalanced and the same every epoch with kFixed.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ferry/result.h"
#include "ferry/stream/streaming_dataset.h"

namespace ferry::internal_stream {

struct VirtualShard {
  uint32_t stream = 0;
  uint32_t shard = 0;  // within the stream's index
  uint64_t count = 0;  // samples taken from it
  /// Sample indexes within the shard, in ascending order; null: 0..count-1 (the whole shard).
  std::shared_ptr<const std::vector<uint32_t>> picks;

  uint64_t SampleInShard(uint64_t j) const { return picks ? (*picks)[j] : j; }
};

struct EpochMix {
  std::vector<VirtualShard> shards;
  uint64_t total = 0;
  std::vector<uint64_t> Counts() const;
};

/// `shard_samples[s]` lists the samples per shard of stream s.
Result<EpochMix> MixStreams(const std::vector<std::vector<uint64_t>>& shard_samples,
                            const std::vector<StreamSpec>& specs,
                            std::optional<uint64_t> epoch_size, SamplingMethod method,
                            uint64_t seed, uint64_t epoch);

}  // namespace ferry::internal_stream
