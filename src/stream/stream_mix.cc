#include "stream/stream_mix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "order/random.h"

namespace ferry::internal_stream {
namespace {

// Keys the draw of the streams that get the samples rounding leaves over (order/random.h).
constexpr uint64_t kLeftoverKey = 0x6c6566746f766572;  // "leftover"

const char* WeightName(const StreamSpec& spec) {
  if (spec.proportion) return "proportion";
  if (spec.repeat) return "repeat";
  if (spec.choose) return "choose";
  return "no weight";
}

uint64_t Floor(double x) {
  // A double at or above 2^64 does not convert (undefined behaviour): such a share is clamped,
  // and Settle gives back what it overshoots.
  return x >= 0x1p64 ? UINT64_MAX : static_cast<uint64_t>(x);
}

// `total` shared in the normalized `weights`, each share rounded down, then one more sample to
// each of as many streams - in a seeded random order - as the rounding left over: Mosaic draws
// them the same way (with its own generator), so the shares sum to `total` exactly.
std::vector<uint64_t> Share(uint64_t total, const std::vector<double>& weights, uint64_t seed) {
  const size_t n = weights.size();
  std::vector<uint64_t> out(n);
  uint64_t sum = 0;
  for (size_t s = 0; s < n; ++s) {
    out[s] = Floor(static_cast<double>(total) * weights[s]);
    sum = out[s] > UINT64_MAX - sum ? UINT64_MAX : sum + out[s];
  }
  internal_order::Rng rng(internal_order::DeriveKey(seed, kLeftoverKey));
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  internal_order::Shuffle(std::span<uint32_t>(order), rng);
  // Each share lost less than one sample, so this takes less than one round - unless floating
  // point rounded a share below its exact value, which another round absorbs.
  for (size_t i = 0; sum < total; ++i) {
    ++out[order[i % n]];
    ++sum;
  }
  // A share rounded above its exact value (a proportion of 1 + 1 ulp) gives back the excess.
  for (size_t i = 0; sum > total; ++i) {
    uint64_t& share = out[order[i % n]];
    const uint64_t back = std::min(share, sum - total);
    share -= back;
    sum -= back;
  }
  return out;
}

Status CheckSpec(size_t s, const StreamSpec& spec) {
  const int given = spec.choose.has_value() + spec.repeat.has_value() + spec.proportion.has_value();
  if (given > 1) {
    return InvalidArgumentError(
        fmt::format("stream {}: give at most one of proportion, repeat and choose", s));
  }
  for (const auto& [name, value] :
       {std::pair{"proportion", spec.proportion}, std::pair{"repeat", spec.repeat}}) {
    // Written so that NaN fails too.
    if (value && !(*value >= 0 && std::isfinite(*value))) {
      return InvalidArgumentError(
          fmt::format("stream {}: {} must be a non-negative number, got {}", s, name, *value));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ResolvedWeights> ResolveWeights(const std::vector<uint64_t>& stream_samples,
                                       const std::vector<StreamSpec>& specs,
                                       std::optional<uint64_t> epoch_size, uint64_t seed) {
  const size_t n = specs.size();
  if (n == 0 || stream_samples.size() != n) {
    return InvalidArgumentError(
        fmt::format("{} streams with {} sample counts", n, stream_samples.size()));
  }
  const bool relative = specs[0].proportion.has_value();
  bool unspecified = true;
  for (size_t s = 0; s < n; ++s) {
    FERRY_RETURN_IF_ERROR(CheckSpec(s, specs[s]));
    if (specs[s].proportion.has_value() != relative) {
      return InvalidArgumentError(fmt::format(
          "relative (proportion) and absolute (repeat, choose, none) stream weights are "
          "incompatible with each other: stream 0 gives {}, stream {} gives {}",
          WeightName(specs[0]), s, WeightName(specs[s])));
    }
    if (specs[s].proportion || specs[s].repeat || specs[s].choose) unspecified = false;
  }
  // Mosaic reads an epoch_size of 0 as none.
  const uint64_t asked = epoch_size.value_or(0);
  uint64_t total_samples = 0;
  for (uint64_t v : stream_samples) total_samples += v;

  ResolvedWeights out;
  out.streams.resize(n);
  std::vector<uint64_t> choose(n);
  std::vector<double> proportion(n);
  if (relative || (unspecified && asked > 0)) {
    // Summed in stream order, as numpy sums a handful of values.
    double sum = 0;
    for (size_t s = 0; s < n; ++s) {
      proportion[s] = relative ? *specs[s].proportion : static_cast<double>(stream_samples[s]);
      sum += proportion[s];
    }
    if (sum <= 0) {
      return InvalidArgumentError(relative ? "the streams' proportions sum to zero"
                                           : "the streams hold no samples");
    }
    for (double& p : proportion) p /= sum;
    out.epoch_size = asked > 0 ? asked : total_samples;
    choose = Share(out.epoch_size, proportion, seed);
  } else {
    if (asked > 0) {
      size_t s = 0;
      while (!specs[s].repeat && !specs[s].choose) ++s;
      return InvalidArgumentError(fmt::format(
          "epoch_size {} is for streams weighted relatively (by proportion, or not at all), "
          "but stream {} gives {}: give every stream a proportion, or no epoch_size",
          asked, s, WeightName(specs[s])));
    }
    for (size_t s = 0; s < n; ++s) {
      const StreamSpec& spec = specs[s];
      if (spec.repeat) {
        // Rounded down, as Mosaic's int(repeat * samples).
        const double chosen = *spec.repeat * static_cast<double>(stream_samples[s]);
        if (chosen >= 0x1p64) {
          return InvalidArgumentError(fmt::format("stream {}: repeat {} x {} samples is too many",
                                                  s, *spec.repeat, stream_samples[s]));
        }
        choose[s] = static_cast<uint64_t>(chosen);
      } else {
        choose[s] = spec.choose ? *spec.choose : stream_samples[s];
      }
      if (choose[s] > UINT64_MAX - out.epoch_size) {
        return InvalidArgumentError("the streams choose more than 2^64 samples together");
      }
      out.epoch_size += choose[s];
    }
    for (size_t s = 0; s < n; ++s) {
      proportion[s] = out.epoch_size > 0
                          ? static_cast<double>(choose[s]) / static_cast<double>(out.epoch_size)
                          : 0;
    }
  }
  for (size_t s = 0; s < n; ++s) {
    out.streams[s] = {.proportion = proportion[s],
                      .repeat = stream_samples[s] > 0 ? static_cast<double>(choose[s]) /
                                                            static_cast<double>(stream_samples[s])
                                                      : 0,
                      .choose = choose[s]};
  }
  return out;
}

std::vector<uint64_t> EpochMix::Counts() const {
  std::vector<uint64_t> out;
  out.reserve(shards.size());
  for (const auto& s : shards) out.push_back(s.count);
  return out;
}

Result<EpochMix> MixStreams(const std::vector<std::vector<uint64_t>>& shard_samples,
                            const std::vector<uint64_t>& choose, SamplingMethod method,
                            uint64_t seed, uint64_t epoch) {
  EpochMix mix;
  for (size_t s = 0; s < shard_samples.size(); ++s) {
    const uint64_t size =
        std::accumulate(shard_samples[s].begin(), shard_samples[s].end(), uint64_t{0});
    if (choose[s] > 0 && size == 0) {
      return InvalidArgumentError(fmt::format("stream {} has no samples to choose from", s));
    }
    if (size == 0) continue;
    const uint64_t copies = choose[s] / size;
    uint64_t rest = choose[s] % size;
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
