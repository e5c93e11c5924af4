// BatchComposition: the global order of an epoch composed from the streams' own orders in whole
// global batches, for Mosaic's batching methods other than `random` (EpochPlan model, step 5).
// Position k maps to (stream s, position q in s's own order, 0 <= q < n_s), as arithmetic on
// positions plus a StreamInterleave for the random choice of streams: no per-sample arrays.
//
// A global batch is what the world reads in one training step: G = ranks x batch_size (B)
// positions of the global order. Partition's deal gives offset o of a global batch to node
// o % P, rank (o / P) % R of the node, at index o / ranks of that device's batch. A stream's
// order is padded as the random order is (Partition): positions n_s..L_s - 1 repeat fewer than
// `ranks` of its samples, each on another rank than the one that read it first; L_s =
// ceil(n_s / ranks) x ranks for per_stream, ceil(n_s / P) x P for device_per_stream.
//
//   per_stream: every global batch from one stream. Stream s gives floor(L_s / G) global
//     batches, positions [k G, (k + 1) G) of its padded order (the partial last one is
//     dropped; a stream that gives none is kInvalidArgument, as Mosaic's ValueError). The
//     streams' batches are interleaved at random (keyed by the seed, and the epoch when
//     shuffling), each stream's in its own order. Offset o of a batch is position k G + o of
//     the stream, which the random order deals to the same device: nodes keep their shards.
//   stratified: every global batch holds b_s samples of stream s, Mosaic's rule: floor(p_s x G)
//     (p_s the stream's proportion), and the samples this leaves go one each to the streams
//     with the largest remainders (ties to the later stream); a b_s of 0 is kInvalidArgument.
//     Global batch g holds positions [g b_s, (g + 1) b_s) of stream s at offsets
//     [start_s, start_s + b_s), start_s = b_0 + ... + b_{s-1}: dealt round robin, so each
//     device's batch holds each stream's share within one sample (Mosaic gives each device a
//     contiguous run of the global batch instead). min_s floor(n_s / b_s) global batches; the
//     rest of every stream is dropped.
//   device_per_stream: every device's batch from one stream. Node p reads, of each stream's
//     padded order, the positions q with q % P == p (those the random order gives it: nodes
//     keep their shards), cut into device batches of B: floor(L_s / (P x B)) per stream and
//     node (the partial last one dropped; a stream that gives none is kInvalidArgument; a
//     padding repeat lands on another node). Each node interleaves its device batches at random
//     (its own lane), pads them to whole rounds of R by repeating fewer than R of them (each on
//     another rank), and in global batch g rank r of node p reads the node's device batch
//     g x R + r.
//
// The composed order is whole global batches, so Partition adds no padding to it. It depends on
// P, R and B (not on the workers).
//
// Thread-safety: immutable after Make; a Cache is used by one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ferry/order/epoch_plan.h"
#include "ferry/result.h"
#include "order/stream_interleave.h"

namespace ferry::internal_order {

struct StreamPosition {
  uint32_t stream = 0;
  uint64_t position = 0;  // in the stream's own order, below its samples
  friend bool operator==(const StreamPosition&, const StreamPosition&) = default;
};

/// Samples of each stream in every global batch of `global_batch` under kStratified (Mosaic's
/// rule, above). kInvalidArgument, naming the stream, for a share of 0.
Result<std::vector<uint64_t>> StratifiedParts(const std::vector<double>& proportions,
                                              uint64_t global_batch);

class BatchComposition {
 public:
  using Cache = StreamInterleave::Cache;

  /// `stream_samples[s]`: n_s, the samples stream s gives this epoch; `proportions[s]` its share
  /// (used by kStratified). `key` draws the interleaving of streams. \pre method is not
  /// kRandom; world and batch_size were checked by Partition::Make.
  static Result<BatchComposition> Make(BatchingMethod method,
                                       const std::vector<uint64_t>& stream_samples,
                                       const std::vector<double>& proportions,
                                       const WorldShape& world, uint32_t batch_size, uint64_t key);

  /// Positions of the composed order: a multiple of global_batch().
  uint64_t samples() const { return samples_; }
  uint64_t global_batch() const { return global_batch_; }

  /// Where position k of the composed order comes from. \pre k < samples().
  StreamPosition At(uint64_t k, Cache* cache) const;

 private:
  BatchComposition() = default;
  /// Position q of stream s's padded order, as a position of its own order.
  uint64_t Unpad(uint32_t s, uint64_t q) const;

  BatchingMethod method_ = BatchingMethod::kPerStream;
  uint64_t nodes_ = 1;
  uint64_t ranks_per_node_ = 1;
  uint64_t batch_ = 1;
  uint64_t global_batch_ = 1;  // G
  uint64_t samples_ = 0;
  std::vector<uint64_t> stream_samples_;  // n_s
  std::vector<uint64_t> padded_;          // L_s (per_stream, device_per_stream)
  std::vector<uint64_t> parts_;           // stratified: b_s
  std::vector<uint64_t> starts_;          // stratified: start_s, S + 1 entries
  uint64_t node_batches_ = 0;             // device_per_stream: device batches of each node
  std::optional<StreamInterleave> interleave_;
};

}  // namespace ferry::internal_order
