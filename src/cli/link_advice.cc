#include "cli/link_advice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/human_size.h"
#include "cache/cache_budget.h"
#include "ferry/cache/shard_cache.h"

namespace ferry::cli {

using internal_cache::CacheBudget;
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string Rate(double bytes_per_s) {
  return FormatBytes(static_cast<uint64_t>(bytes_per_s)) + "/s";
}

}  // namespace

LinkAdvice AdviseLink(const LinkMeasurements& m, const std::optional<DatasetShape>& dataset) {
  LinkAdvice a;
  const double rtt = std::max(m.rtt_s, 1e-4);
  const double per_connection = std::max(m.connection_bytes_per_s, 1.0);
  const double aggregate = std::max(m.aggregate_bytes_per_s, per_connection);

  a.window_bytes = static_cast<uint64_t>(std::ceil(aggregate * rtt * 2));
  a.reasoning.push_back(fmt::format(
      "bytes in flight: {} x {:.0f} ms x 2 (margin) = {} - less leaves the link idle while "
      "requests travel",
      Rate(aggregate), rtt * 1000, FormatBytes(a.window_bytes)));

  a.connections =
      static_cast<uint32_t>(std::clamp(std::ceil(aggregate / per_connection), 1.0, 256.0));
  a.reasoning.push_back(fmt::format("connections: {} aggregate / {} per connection = {} at once",
                                    Rate(aggregate), Rate(per_connection), a.connections));

  const double floor_bytes = 9 * rtt * per_connection;
  uint64_t shard = 16 * kMiB;
  while (shard < floor_bytes && shard < 512 * kMiB) shard *= 2;
  if (dataset && dataset->shards > 0) {
    const uint64_t mean = dataset->bytes / dataset->shards;
    a.reasoning.push_back(fmt::format(
        "shard size: the dataset's are {} on average; {} a round trip costs {:.0f} % of a "
        "shard's transfer ({:.0f} ms of {:.0f} ms){}",
        FormatBytes(mean), mean >= floor_bytes ? "fine:" : "too small:",
        100 * rtt / (rtt + mean / per_connection), rtt * 1000, 1000 * mean / per_connection,
        mean >= floor_bytes ? ""
                            : fmt::format(" - rewrite with --size-limit {}", FormatBytes(shard))));
    a.shard_bytes = std::max<uint64_t>(mean, 1);
  } else {
    a.shard_bytes = shard;
    a.reasoning.push_back(fmt::format(
        "shard size: at least 9 x {:.0f} ms x {} = {} so that a round trip is at most 10 % of a "
        "shard's transfer: use {}",
        rtt * 1000, Rate(per_connection), FormatBytes(static_cast<uint64_t>(floor_bytes)),
        FormatBytes(shard)));
  }

  const auto by_window = static_cast<uint32_t>(
      std::ceil(static_cast<double>(a.window_bytes) / static_cast<double>(a.shard_bytes)));
  // What the shard cache does: shards of parallel_part_threshold and more come in parts, at
  // most kMaxAutoDownloadParts when it chooses itself.
  if (a.shard_bytes >= ShardCacheOptions{}.parallel_part_threshold) {
    const uint32_t shards = std::max(by_window, 2u);
    a.parts_per_shard =
        std::clamp((a.connections + shards - 1) / shards, 1u, kMaxAutoDownloadParts);
    a.reasoning.push_back(fmt::format(
        "download_parts: {} connections / max({} window / {} shard, 2) = {} ranged parts per "
        "shard{}",
        a.connections, FormatBytes(a.window_bytes), FormatBytes(a.shard_bytes), a.parts_per_shard,
        a.parts_per_shard == 1 ? " - one connection carries the link: more would only cost"
                               : " - one connection alone gets a fraction of the link"));
  } else {
    a.parts_per_shard = 1;  // small shards come whole
  }
  const auto by_connections =
      static_cast<uint32_t>(std::ceil(static_cast<double>(a.connections) / a.parts_per_shard));
  a.shards_in_flight = std::max({by_connections, by_window, 2u});
  a.reasoning.push_back(fmt::format(
      "download_concurrency: max({} connections / {} parts per shard, {} window / {} shard, 2) "
      "= {} shards at once",
      a.connections, a.parts_per_shard, FormatBytes(a.window_bytes), FormatBytes(a.shard_bytes),
      a.shards_in_flight));

  if (!dataset || dataset->samples == 0 || dataset->shards == 0) return a;
  const uint64_t per_shard = std::max<uint64_t>(1, dataset->samples / dataset->shards);
  a.predownload_samples = uint64_t{a.shards_in_flight} * per_shard;
  a.reasoning.push_back(fmt::format("predownload: {} shards x {} samples per shard = {} samples",
                                    a.shards_in_flight, per_shard, *a.predownload_samples));
  a.cache_limit_bytes =
      std::max<uint64_t>(dataset->bytes + dataset->bytes / 10, 4 * a.window_bytes);
  // Half the limit holds the order's working set and at least a quarter the look-ahead
  // (src/cache/cache_budget.h); a cache that holds the dataset whole needs neither.
  const auto least_for = [&](uint64_t working_set) {
    return std::min(*a.cache_limit_bytes,
                    std::max(4 * a.window_bytes, CacheBudget::LimitToHold(working_set)));
  };
  a.min_cache_limit_bytes = least_for(dataset->working_set_bytes.value_or(0));
  std::string smaller;
  if (*a.min_cache_limit_bytes >= *a.cache_limit_bytes) {
    smaller = fmt::format("; a smaller one would fetch shards again within an epoch ({})",
                          dataset->working_set_bytes
                              ? fmt::format("{} keeps {} in use at once", dataset->order,
                                            FormatBytes(*dataset->working_set_bytes))
                              : std::string("the look-ahead alone needs 4 windows"));
  } else if (dataset->working_set_bytes) {
    smaller = fmt::format(
        "; a smaller one reads each epoch without fetching a shard twice down to {}: "
        "max(2 x the {} that {} keeps in use at once, 4 windows){}",
        FormatBytes(*a.min_cache_limit_bytes), FormatBytes(*dataset->working_set_bytes),
        dataset->order,
        dataset->py1s_working_set_bytes
            ? fmt::format(" - with shuffle_algo py1s, {}",
                          FormatBytes(least_for(*dataset->py1s_working_set_bytes)))
            : std::string());
  } else {
    smaller = fmt::format("; a smaller one works down to 4 windows, {}, if the shuffle fits it",
                          FormatBytes(*a.min_cache_limit_bytes));
  }
  a.reasoning.push_back(fmt::format(
      "cache_limit: the dataset ({}) plus 10 %: {} - epoch 2 then makes no remote request{}",
      FormatBytes(dataset->bytes), FormatBytes(*a.cache_limit_bytes), smaller));
  const double used = std::min(aggregate, a.shards_in_flight * a.parts_per_shard * per_connection);
  a.epoch1_s = 2 * rtt + static_cast<double>(dataset->bytes) / used;
  a.reasoning.push_back(fmt::format("epoch 1: 2 x {:.0f} ms + {} / {} = {:.1f} s", rtt * 1000,
                                    FormatBytes(dataset->bytes), Rate(used), *a.epoch1_s));
  if (m.local_read_bytes_per_s && *m.local_read_bytes_per_s > 0) {
    a.epoch2_s = static_cast<double>(dataset->bytes) / *m.local_read_bytes_per_s;
    a.reasoning.push_back(fmt::format("epoch 2: {} / {} read locally = {:.1f} s",
                                      FormatBytes(dataset->bytes), Rate(*m.local_read_bytes_per_s),
                                      *a.epoch2_s));
  }
  return a;
}

}  // namespace ferry::cli
