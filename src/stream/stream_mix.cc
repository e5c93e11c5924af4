#include "stream/stream_mix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "order/random.h"

namespace ferry::internal_stream {
namespace {}  // namespace

std::vector<uint64_t> EpochMix::Counts() const {
  std::vector<uint64_t> out;
  out.reserve(shards.size());
  for (const auto& s : shards) out.push_back(s.count);
  return out;
}

Result<EpochMix> MixStreams(const std::vector<std::vector<uint64_t>>& shard_samples,
                            const std::vector<StreamSpec>& specs,
                            std::optional<uint64_t> epoch_size, SamplingMethod method,
                            uint64_t seed, uint64_t epoch) {
  const size_t n = specs.size();
  std::vector<uint64_t> sizes(n);
  for (size_t s = 0; s < n; ++s) {
    sizes[s] = std::accumulate(shard_samples[s].begin(), shard_samples[s].end(), uint64_t{0});
  }
  const uint64_t total_size = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});

  // How many samples each stream gives this epoch.
  std::vector<uint64_t> choose(n, 0);
  double proportion_sum = 0;
  uint64_t fixed_sum = 0;
  for (size_t s = 0; s < n; ++s) {
    const StreamSpec& spec = specs[s];
    const int given =
        spec.choose.has_value() + spec.repeat.has_value() + spec.proportion.has_value();
    if (given > 1) {
      return InvalidArgumentError(
          fmt::format("stream {}: give at most one of proportion, repeat and choose", s));
    }
    if (spec.proportion && *spec.proportion < 0) {
      return InvalidArgumentError(fmt::format("stream {}: proportion must be >= 0", s));
    }
    if (spec.repeat && *spec.repeat < 0) {
      return InvalidArgumentError(fmt::format("stream {}: repeat must be >= 0", s));
    }
    if (spec.proportion) {
      proportion_sum += *spec.proportion;
      continue;
    }
    if (spec.choose) {
      choose[s] = *spec.choose;
    } else if (spec.repeat) {
      choose[s] = static_cast<uint64_t>(std::llround(*spec.repeat * static_cast<double>(sizes[s])));
    } else if (epoch_size && proportion_sum == 0) {
      choose[s] = 0;  // filled below, scaled to epoch_size
      continue;
    } else {
      choose[s] = sizes[s];
    }
    fixed_sum += choose[s];
  }
  const bool any_proportion = std::any_of(
      specs.begin(), specs.end(), [](const StreamSpec& s) { return s.proportion.has_value(); });
  if (any_proportion) {
    if (!epoch_size) return InvalidArgumentError("streams with a proportion need an epoch_size");
    if (proportion_sum <= 0) return InvalidArgumentError("stream proportions sum to zero");
    const double left = *epoch_size > fixed_sum ? static_cast<double>(*epoch_size - fixed_sum) : 0;
    for (size_t s = 0; s < n; ++s) {
      if (specs[s].proportion) {
        choose[s] =
            static_cast<uint64_t>(std::llround(left * *specs[s].proportion / proportion_sum));
      }
    }
  } else if (epoch_size) {
    // Streams given nothing share the rest of epoch_size in proportion to their sizes.
    uint64_t unset_size = 0;
    for (size_t s = 0; s < n; ++s) {
      if (!specs[s].choose && !specs[s].repeat) unset_size += sizes[s];
    }
    const double left = *epoch_size > fixed_sum ? static_cast<double>(*epoch_size - fixed_sum) : 0;
    for (size_t s = 0; s < n; ++s) {
      if (!specs[s].choose && !specs[s].repeat && unset_size > 0) {
        choose[s] = static_cast<uint64_t>(
            std::llround(left * static_cast<double>(sizes[s]) / static_cast<double>(unset_size)));
      }
    }
  }
  (void)total_size;

  EpochMix mix;
  for (size_t s = 0; s < n; ++s) {
    if (choose[s] > 0 && sizes[s] == 0) {
      return InvalidArgumentError(fmt::format("stream {} has no samples to choose from", s));
    }
    if (sizes[s] == 0) continue;
    const uint64_t copies = choose[s] / sizes[s];
    uint64_t rest = choose[s] % sizes[s];
    for (uint64_t c = 0; c < copies; ++c) {
      for (size_t k = 0; k < shard_samples[s].size(); ++k) {
        if (shard_samples[s][k] == 0) continue;
        mix.shards.push_back(
            {static_cast<uint32_t>(s), static_cast<uint32_t>(k), shard_samples[s][k], nullptr});
      }
    }
    if (rest == 0) continue;
    // The subset: whole shards in a random order, then part of one more.
    // order/random.h's generator, keyed by (seed, stream, epoch - or not, with "fixed").
    internal_order::Rng rng(internal_order::DeriveKey(
        internal_order::DeriveKey(seed, s), method == SamplingMethod::kBalanced ? epoch + 1 : 0));
    std::vector<uint32_t> order(shard_samples[s].size());
    std::iota(order.begin(), order.end(), 0);
    internal_order::Shuffle(std::span<uint32_t>(order), rng);
    for (uint32_t k : order) {
      const uint64_t have = shard_samples[s][k];
      if (have == 0) continue;
      if (have <= rest) {
        mix.shards.push_back({static_cast<uint32_t>(s), k, have, nullptr});
        rest -= have;
      } else {
        std::vector<uint32_t> all(have);
        std::iota(all.begin(), all.end(), 0);
        internal_order::Shuffle(std::span<uint32_t>(all), rng);
        all.resize(rest);
        std::sort(all.begin(), all.end());
        mix.shards.push_back({static_cast<uint32_t>(s), k, rest,
                              std::make_shared<const std::vector<uint32_t>>(std::move(all))});
        rest = 0;
      }
      if (rest == 0) break;
    }
  }
  for (const auto& v : mix.shards) mix.total += v.count;
  return mix;
}

}  // namespace ferry::internal_stream
