// The samples of one epoch after mixing streams, as Mosaic Streaming mixes them: each stream's
// weight (proportion / repeat / choose) is resolved once into the samples it gives every epoch
// (ResolveWeights), then those samples are grouped into "virtual shards" that the EpochPlan
// orders (MixStreams): each is one real shard of one stream, whole or a subset, so that
// shuffling keeps shard locality.
//
// A stream that gives `choose` = k x size + r samples gives k copies of every shard and an
// r-sample subset drawn shard-wise: whole shards in a seeded random order, then a seeded random
// part of one more shard - so a subset costs no more downloads than its size needs. The subset
// is re-drawn every epoch with kBalanced and the same every epoch with kFixed.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ferry/result.h"
#include "ferry/stream/streaming_dataset.h"

namespace ferry::internal_stream {

struct ResolvedWeights {
  std::vector<StreamWeight> streams;
  uint64_t epoch_size = 0;  // the sum of the streams' `choose`
};

/// Each stream's weight, from `stream_samples[s]` (samples of stream s) and what its spec gives,
/// by Mosaic's rule (its Stream.apply_weights), which has three cases:
///  - relative: every stream gives a proportion. The epoch takes `epoch_size` samples (or, unset
///    or 0, as many as the streams hold together), shared in the normalized proportions;
///  - unspecified, with an `epoch_size`: no stream gives a weight; shared in proportion to the
///    streams' sizes;
///  - absolute: each stream gives repeat (floor(repeat x size) samples), choose, or nothing (its
///    size); the epoch is their sum, so an `epoch_size` is an error.
/// A share is rounded down, and the samples that rounding leaves over go one each to as many
/// streams, drawn with `seed` (the same every epoch): the streams sum to the epoch size exactly.
/// `proportion` is the stream's share of the epoch, `repeat` = choose / its size (0 for an empty
/// stream). kInvalidArgument, naming the stream, for what Mosaic refuses with a ValueError: two
/// weights in one stream, a negative one, proportions in some streams and not in others, an
/// epoch_size with absolute weights; also for proportions that sum to zero.
Result<ResolvedWeights> ResolveWeights(const std::vector<uint64_t>& stream_samples,
                                       const std::vector<StreamSpec>& specs,
                                       std::optional<uint64_t> epoch_size, uint64_t seed);

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

/// The virtual shards of `epoch`: `choose[s]` samples of stream s, whose shards hold
/// `shard_samples[s]` samples each.
Result<EpochMix> MixStreams(const std::vector<std::vector<uint64_t>>& shard_samples,
                            const std::vector<uint64_t>& choose, SamplingMethod method,
                            uint64_t seed, uint64_t epoch);

}  // namespace ferry::internal_stream
