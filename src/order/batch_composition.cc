#include "order/batch_composition.h"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <string>
#include <utility>

#include "base/int_math.h"
#include "order/partition.h"

namespace ferry {

Result<BatchingMethod> ParseBatchingMethod(std::string_view name) {
  if (name == "random") return BatchingMethod::kRandom;
  if (name == "per_stream") return BatchingMethod::kPerStream;
  if (name == "stratified") return BatchingMethod::kStratified;
  if (name == "device_per_stream") return BatchingMethod::kDevicePerStream;
  return InvalidArgumentError("batching_method " + std::string(name) +
                              " is not one of random, per_stream, stratified, device_per_stream");
}

std::string_view BatchingMethodName(BatchingMethod method) {
  switch (method) {
    case BatchingMethod::kRandom:
      return "random";
    case BatchingMethod::kPerStream:
      return "per_stream";
    case BatchingMethod::kStratified:
      return "stratified";
    case BatchingMethod::kDevicePerStream:
      return "device_per_stream";
  }
  return "unknown";
}

namespace internal_order {
namespace {

std::string Describe(uint64_t global_batch, uint64_t batch, uint64_t ranks) {
  return std::to_string(global_batch) + " (batch_size " + std::to_string(batch) + " x " +
         std::to_string(ranks) + (ranks == 1 ? " rank)" : " ranks)");
}

}  // namespace

Result<std::vector<uint64_t>> StratifiedParts(const std::vector<double>& proportions,
                                              uint64_t global_batch) {
  const size_t n = proportions.size();
  std::vector<uint64_t> parts(n);
  std::vector<double> leftover(n);
  uint64_t given = 0;
  for (size_t s = 0; s < n; ++s) {
    // Truncated, and the remainders computed, in doubles as Mosaic does: the same parts.
    const double exact = static_cast<double>(global_batch) * std::max(0.0, proportions[s]);
    parts[s] = static_cast<uint64_t>(std::min(exact, static_cast<double>(global_batch)));
    leftover[s] = exact - static_cast<double>(parts[s]);
    given += parts[s];
  }
  // Largest remainders first; of equal ones, the later stream first.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return leftover[a] != leftover[b] ? leftover[a] > leftover[b] : a > b;
  });
  for (size_t i = 0; given < global_batch && i < n; ++i, ++given) ++parts[order[i]];
  if (given < global_batch) {
    // Remainders add at most one part per stream: the proportions add up to less than one.
    return InvalidArgumentError(
        "batching_method stratified: the streams' proportions add up to " +
        std::to_string(std::accumulate(proportions.begin(), proportions.end(), 0.0)) + ", not 1");
  }
  // Proportions that add up past one by rounding: take back from the largest parts.
  while (given > global_batch) {
    --*std::max_element(parts.begin(), parts.end());
    --given;
  }
  for (size_t s = 0; s < n; ++s) {
    if (parts[s] == 0) {
      return InvalidArgumentError(
          "Number of samples for stream " + std::to_string(s) + " in each global batch of " +
          std::to_string(global_batch) +
          " is 0 with batching_method stratified: its proportion of the epoch (" +
          std::to_string(proportions[s]) +
          ") is too low; raise the global batch (batch_size x ranks) or the stream's proportion");
    }
  }
  return parts;
}

Result<BatchComposition> BatchComposition::Make(BatchingMethod method,
                                                const std::vector<uint64_t>& stream_samples,
                                                const std::vector<double>& proportions,
                                                const WorldShape& world, uint32_t batch_size,
                                                uint64_t key) {
  assert(method != BatchingMethod::kRandom);
  assert(proportions.size() == stream_samples.size());
  BatchComposition c;
  c.method_ = method;
  c.nodes_ = world.nodes;
  c.ranks_per_node_ = world.ranks_per_node;
  c.batch_ = batch_size;
  const uint64_t ranks = c.nodes_ * c.ranks_per_node_;
  c.global_batch_ = ranks * c.batch_;
  c.stream_samples_ = stream_samples;
  // Whole ranks for per_stream (each device of a global batch reads one of its positions);
  // whole nodes for device_per_stream (each node reads one of every P), so that a repeat lands
  // on another node than the sample's first read, never on the same rank.
  const uint64_t pad_to = method == BatchingMethod::kDevicePerStream ? c.nodes_ : ranks;
  for (const uint64_t n : stream_samples) c.padded_.push_back(CeilDiv(n, pad_to) * pad_to);
  const size_t streams = stream_samples.size();

  if (method == BatchingMethod::kStratified) {
    FERRY_ASSIGN_OR_RETURN(c.parts_, StratifiedParts(proportions, c.global_batch_));
    c.starts_.assign(1, 0);
    uint64_t batches = streams == 0 ? 0 : UINT64_MAX;
    for (size_t s = 0; s < streams; ++s) {
      c.starts_.push_back(c.starts_.back() + c.parts_[s]);
      batches = std::min(batches, stream_samples[s] / c.parts_[s]);
    }
    c.samples_ = batches * c.global_batch_;
    return c;
  }

  // Whole global batches (per_stream) or device batches of each node (device_per_stream).
  const bool per_device = method == BatchingMethod::kDevicePerStream;
  const uint64_t unit = per_device ? c.nodes_ * c.batch_ : c.global_batch_;
  std::vector<uint64_t> batches(streams);
  for (size_t s = 0; s < streams; ++s) {
    batches[s] = c.padded_[s] / unit;
    if (batches[s] == 0) {
      const std::string what =
          per_device ? "one device batch of " + std::to_string(c.batch_) + " on each of " +
                           std::to_string(c.nodes_) + (c.nodes_ == 1 ? " node" : " nodes")
                     : "one complete global batch of " + Describe(c.global_batch_, c.batch_, ranks);
      return InvalidArgumentError(
          "stream " + std::to_string(s) + " does not have enough samples this epoch (" +
          std::to_string(stream_samples[s]) + ") for " + what + ", and batching_method " +
          std::string(BatchingMethodName(method)) + " draws every " +
          (per_device ? "device" : "global") +
          " batch from one stream: raise its samples (proportion, repeat, choose) or lower "
          "batch_size");
    }
  }
  FERRY_ASSIGN_OR_RETURN(StreamInterleave interleave, StreamInterleave::Make(batches, key));
  if (per_device) {
    c.node_batches_ = interleave.size();
    c.samples_ = CeilDiv(c.node_batches_, c.ranks_per_node_) * c.global_batch_;
  } else {
    c.samples_ = interleave.size() * c.global_batch_;
  }
  c.interleave_ = std::move(interleave);
  return c;
}

uint64_t BatchComposition::Unpad(uint32_t s, uint64_t q) const {
  return PaddedSource(q, stream_samples_[s], padded_[s]);
}

StreamPosition BatchComposition::At(uint64_t k, Cache* cache) const {
  assert(k < samples_);
  const uint64_t g = k / global_batch_;
  const uint64_t o = k % global_batch_;
  switch (method_) {
    case BatchingMethod::kStratified: {
      const auto s = static_cast<uint32_t>(std::upper_bound(starts_.begin(), starts_.end(), o) -
                                           starts_.begin() - 1);
      return {s, g * parts_[s] + (o - starts_[s])};
    }
    case BatchingMethod::kDevicePerStream: {
      const uint64_t node = o % nodes_;
      const uint64_t rank = o / nodes_ % ranks_per_node_;
      const uint64_t index = o / (nodes_ * ranks_per_node_);
      uint64_t t = g * ranks_per_node_ + rank;  // the node's device batch
      if (t >= node_batches_) {
        // Padding to whole rounds: fewer than R repeats, each on another rank.
        const uint64_t repeats =
            CeilDiv(node_batches_, ranks_per_node_) * ranks_per_node_ - node_batches_;
        t = (t + node_batches_ - repeats % node_batches_) % node_batches_;
      }
      const StreamInterleave::Item item = interleave_->At(static_cast<uint32_t>(node), t, cache);
      const uint64_t m = item.index * batch_ + index;  // among the node's positions of stream s
      return {item.sequence, Unpad(item.sequence, node + nodes_ * m)};
    }
    default: {
      const StreamInterleave::Item item = interleave_->At(0, g, cache);
      return {item.sequence, Unpad(item.sequence, item.index * global_batch_ + o)};
    }
  }
}

}  // namespace internal_order
}  // namespace ferry
