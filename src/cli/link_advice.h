// LinkAdvice: from measurements of a link (round-trip time, one connection's bandwidth, the
// aggregate bandwidth of many, the small-request rate) to the streaming settings that fill it,
// with the arithmetic behind each, as `ferry doctor` prints them. A pure function, so the advice
// is tested on recorded numbers.
//
// The rules (docs/cli.md, doctor):
//   window (bytes in flight) = aggregate bandwidth x RTT x 2   (Little's law, margin 2)
//   connections              = ceil(aggregate / per-connection bandwidth)
//   shard size               >= 9 x RTT x per-connection bandwidth (a request's round trip is
//                               at most 10 % of its transfer), a power of two in 16..512 MiB
//   parts per shard          = ceil(connections / max(ceil(window / shard), 2)), 1..8, for
//                               shards of 32 MiB and more (else 1): as many as it takes,
//                               beside the shards the window holds, to open the connections
//                               the link needs - one, where one connection carries it
//   shards in flight         = max(ceil(connections / parts per shard), ceil(window / shard))
//   predownload (samples)    = shards in flight x samples per shard
//   cache_limit              = the dataset + 10 % (epoch 2 then makes no request); the least
//                               that reads an epoch without fetching a shard twice is
//                               max(2 x the shuffle's working set, 4 windows): half the limit
//                               holds the working set, at least a quarter the look-ahead
//                               (src/cache/cache_budget.h)
//   epoch 1 ~ 2 RTT + bytes / min(aggregate, connections used x per-connection)
//   epoch 2 ~ bytes / local read rate
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ferry::cli {

struct LinkMeasurements {
  double rtt_s = 0;                    // median time of a tiny request
  double connection_bytes_per_s = 0;   // one connection, one large read
  double aggregate_bytes_per_s = 0;    // many connections at once
  uint32_t aggregate_connections = 0;  // how many that was
  double small_requests_per_s = 0;     // tiny requests with many in flight
  std::optional<double> local_read_bytes_per_s;
};

struct DatasetShape {
  uint64_t samples = 0;
  uint64_t bytes = 0;  // of the files a reader fetches
  uint64_t shards = 0;
  /// The bytes of shards that the node's readers keep in use at once under the shuffle asked
  /// for (src/order/working_set.h), described as `order` ("py1e, shuffle_block_size 262144, 2
  /// workers"), and under py1s, the least a shuffle needs. Unknown: the cache's floor counts
  /// only the look-ahead.
  std::optional<uint64_t> working_set_bytes;
  std::string order;
  std::optional<uint64_t> py1s_working_set_bytes;
};

struct LinkAdvice {
  uint64_t window_bytes = 0;
  uint32_t connections = 0;
  uint64_t shard_bytes = 0;  // recommended (or the dataset's, when given)
  uint32_t parts_per_shard = 0;
  uint32_t shards_in_flight = 0;
  std::optional<uint64_t> predownload_samples;
  std::optional<uint64_t> cache_limit_bytes;
  /// The smallest cache_limit that reads an epoch without fetching a shard twice.
  std::optional<uint64_t> min_cache_limit_bytes;
  std::optional<double> epoch1_s;
  std::optional<double> epoch2_s;
  std::vector<std::string> reasoning;  // one line per setting: the arithmetic
};

LinkAdvice AdviseLink(const LinkMeasurements& m, const std::optional<DatasetShape>& dataset);

}  // namespace ferry::cli
