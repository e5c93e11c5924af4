#include "order/canonical_spans.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <string>

#include "base/int128.h"
#include "order/random.h"

namespace ferry::internal_order {

Result<std::shared_ptr<const CanonicalSpans>> CanonicalSpans::Make(
    std::vector<uint64_t> shard_samples, uint32_t num_canonical_nodes,
    std::optional<uint64_t> shuffle_key) {
  // One id is kept free so that a shard index always fits in uint32 with room for "one past".
  if (shard_samples.size() >= std::numeric_limits<uint32_t>::max()) {
    return InvalidArgumentError("the dataset has " + std::to_string(shard_samples.size()) +
                                " shards; at most 4294967294 are supported");
  }
  if (num_canonical_nodes == 0 || num_canonical_nodes > kMaxCanonicalNodes) {
    return InvalidArgumentError("num_canonical_nodes = " + std::to_string(num_canonical_nodes) +
                                " must be between 1 and " + std::to_string(kMaxCanonicalNodes));
  }
  std::shared_ptr<CanonicalSpans> spans(new CanonicalSpans());
  spans->num_canonical_nodes_ = num_canonical_nodes;
  const size_t n = shard_samples.size();
  spans->shard_begin_.resize(n + 1);
  uint64_t total = 0;
  for (size_t s = 0; s < n; ++s) {
    spans->shard_begin_[s] = total;
    if (shard_samples[s] > std::numeric_limits<uint64_t>::max() / 2 - total) {
      return InvalidArgumentError("the shards' sample counts overflow at shard " +
                                  std::to_string(s));
    }
    total += shard_samples[s];
  }
  spans->shard_begin_[n] = total;

  spans->order_.resize(n);
  std::iota(spans->order_.begin(), spans->order_.end(), uint32_t{0});
  if (shuffle_key) {
    Rng rng(*shuffle_key);
    Shuffle(std::span<uint32_t>(spans->order_), rng);
    spans->identity_ = false;
  }
  spans->ordered_begin_.resize(n + 1);
  uint64_t at = 0;
  for (size_t k = 0; k < n; ++k) {
    spans->ordered_begin_[k] = at;
    at += shard_samples[spans->order_[k]];
  }
  spans->ordered_begin_[n] = at;
  spans->span_begin_.resize(num_canonical_nodes + 1);
  for (uint32_t c = 0; c <= num_canonical_nodes; ++c) {
    spans->span_begin_[c] =
        static_cast<uint64_t>(static_cast<UInt128>(c) * total / num_canonical_nodes);
  }
  return std::shared_ptr<const CanonicalSpans>(std::move(spans));
}

uint32_t CanonicalSpans::PieceAt(uint64_t x) const {
  assert(x < total_samples());
  // The last shard starting at or before x: empty shards share their start with the next
  // shard, so this skips them.
  const auto it = std::upper_bound(ordered_begin_.begin(), ordered_begin_.end(), x);
  return static_cast<uint32_t>(it - ordered_begin_.begin() - 1);
}

void CanonicalSpans::SamplesInRange(uint64_t x, std::span<uint64_t> out) const {
  if (out.empty()) return;
  assert(x + out.size() <= total_samples());
  uint32_t k = PieceAt(x);
  size_t i = 0;
  while (i < out.size()) {
    const uint64_t end = ordered_begin_[k + 1];
    const uint64_t base = shard_begin_[order_[k]] - ordered_begin_[k];
    for (; i < out.size() && x < end; ++i, ++x) out[i] = base + x;
    ++k;
  }
}

std::pair<uint32_t, uint64_t> CanonicalSpans::Locate(uint64_t sample) const {
  assert(sample < total_samples());
  const auto it = std::upper_bound(shard_begin_.begin(), shard_begin_.end(), sample);
  const auto shard = static_cast<uint32_t>(it - shard_begin_.begin() - 1);
  return {shard, sample - shard_begin_[shard]};
}

}  // namespace ferry::internal_order
