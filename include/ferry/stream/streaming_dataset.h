// StreamingDataset: one or more MDS datasets (streams), each remote or local, read through a
// shared local cache in the order of an EpochPlan, with shards fetched ahead of use.
//
//   StreamingOptions options;
//   options.streams = {{.remote = "s3://bucket/data", .local = "/tmp/cache/data"}};
//   options.order.shuffle = true;
//   auto ds = StreamingDataset::Open(options).value();
//   auto it = ds->Iterate({.world = {}, .worker = {}, .epoch = 0}).value();
//   while (auto sample = it->Next().value()) { ... sample->fields[c] ... }
//
// Streams are mixed per epoch as Mosaic Streaming does: each stream contributes `choose` samples
// (or its `proportion` of epoch_size - of all the streams' samples without one -, or `repeat` x
// its size; by default all of its samples, or its size's share of an epoch_size): at Open the
// weights resolve into a StreamWeight per stream (src/stream/stream_mix.h has the rule). A
// stream chosen below its size contributes a random subset (re-drawn every epoch with
// sampling_method "balanced", the same every epoch with "fixed"), above its size whole copies
// plus a subset. Chosen samples keep their shard grouping, so the order stays shard-local.
//
// Iteration: a worker's iterator walks its EpochPlan cursor; a prefetch scheduler (one thread
// per iterator) looks `predownload` samples ahead and makes their shards local with
// `download_concurrency` downloads at once and at most `max_bytes_in_flight` bytes being
// fetched (under a cache_limit, at most its share of what the cache budget leaves for it among
// the iterators reading the cache folder, in all processes: src/cache/cache_budget.h), pinning
// each shard until the iterator is past its last upcoming use; node_download_concurrency bounds
// the downloads of all of them together, across processes. With
// predownload/concurrency "auto" (nullopt) it sizes the window from the bandwidth and round-trip
// time it measures (bytes in flight ~ bandwidth x RTT x 2) and reports what it chose in metrics.
// At the cold start, before any shard is local, an iterator's first sample (of a raw,
// uncompressed shard) is read with ranged GETs while the shards download, so it arrives after
// the index and two small requests, not after a whole shard.
//
// A shard deleted from a cache folder under the readers (by a user, or another job) is fetched
// again when next read, in that epoch, even when a reader has it open (src/cache/deletion_watch.h);
// without a remote, opening it again is kNotFound naming the file. A `remote` that is the
// `local` folder itself is no remote: the dataset is read in place, and never evicted.
//
// Thread-safety: StreamingDataset is shared by any number of iterators and threads; one
// SampleIterator is used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/format/dataset_description.h"
#include "ferry/order/epoch_plan.h"
#include "ferry/result.h"

namespace ferry {

struct MappedShardFile;  // ferry/format/shard_reader.h

/// What reading one of a stream's sources (its remote, a mirror) costs, and may cost
/// (docs/sources.md, "Egress"; src/storage/mirror_store.h's SourceEgress).
struct EgressOptions {
  /// The source's name in counters and reports ("aws-us-east-1"); empty: its store and bucket.
  std::string label;
  double usd_per_gb = 0;  // its egress price, for the estimate of what reading it cost
  /// Bytes it may deliver into the cache folder from the open on, summed over the node's
  /// processes; then reads go to the other mirrors, and with none left fail
  /// (kResourceExhausted) rather than spend more.
  std::optional<uint64_t> budget;
  /// The same for each epoch: bytes delivered since the process began reading the epoch.
  std::optional<uint64_t> epoch_budget;
};

struct StreamSpec {
  /// Any store URL, or WebDataset's way to name tars of one folder: a brace pattern
  /// ("s3://b/train-{000000..000127}.tar") or a "::" list (src/format/shard_pattern.h). Empty:
  /// the dataset is already in `local` (read in place).
  std::string remote;
  /// Other places that hold the same dataset, after `remote` in preference order (MirrorStore:
  /// src/storage/mirror_store.h): each shard comes from the first that answers, a failed read
  /// goes on from the next at the byte it reached. Their index.json must equal remote's.
  std::vector<std::string> mirrors;
  /// Egress accounting per source, by its URL (`remote` or one of `mirrors`).
  std::map<std::string, EgressOptions> egress;
  std::string local;                 // the cache folder (or, without remote, the dataset folder)
  std::string split;                 // sub-folder of both
  std::optional<double> proportion;  // of epoch_size
  std::optional<double> repeat;      // copies of this stream per epoch
  std::optional<uint64_t> choose;    // samples of this stream per epoch
};

/// What one stream gives every epoch, resolved from its spec (the three values Mosaic's
/// Stream.apply_weights sets on every stream).
struct StreamWeight {
  double proportion = 0;  // its share of the epoch
  double repeat = 0;      // choose / its samples
  uint64_t choose = 0;    // samples per epoch
};

enum class SamplingMethod { kBalanced, kFixed };

/// A cluster cache (docs/sources.md, "Peer fetch"): the nodes of a job serve their cache
/// folders to each other, and each shard is fetched from the remote by one node, its owner, which
/// streams it to the others (src/storage/peer_store.h, src/cache/peer_server.h).
struct PeerOptions {
  /// "host:port" of every node's peer server, this node's included, the same on every node.
  /// Empty: FERRY_PEERS (comma-separated), and without it no peer fetch.
  std::vector<std::string> addresses;
  /// Which of `addresses` this node is. Empty: FERRY_PEER_SELF, else the one whose host is this
  /// machine's hostname.
  std::string self;
  /// Shared by the nodes; every request to a peer server must carry it. Empty: FERRY_PEER_TOKEN.
  std::string token;
  /// The address this node's server listens on. Empty: self's host when it is an IPv4 address,
  /// else every interface (0.0.0.0).
  std::string listen_host;
};

struct StreamingOptions {
  std::vector<StreamSpec> streams;
  OrderOptions order;
  /// Samples per epoch over all streams weighted by proportion (or not at all); unset or 0: as
  /// many as those streams hold. An error with repeat or choose weights.
  std::optional<uint64_t> epoch_size;
  SamplingMethod sampling_method = SamplingMethod::kBalanced;
  std::optional<uint64_t> predownload;           // samples ahead per worker; nullopt: auto
  std::optional<uint32_t> download_concurrency;  // shards fetched at once; nullopt: auto
  uint64_t max_bytes_in_flight = uint64_t{1} << 30;
  /// Ranged parts a shard of 32 MiB or more is fetched as, at once (at least 1): several
  /// connections fill a link that holds each one to a fraction of it (a cross-cloud TCP
  /// stream); where one connection can carry the link, fewer parts cost less. nullopt: auto,
  /// 1 to 8 from how the rates of the downloads so far respond to their number
  /// (src/cache/part_tuner.h); `ferry doctor` measures which, ahead of time.
  std::optional<uint32_t> download_parts;
  /// Shard downloads at once from each cache folder, across every worker and process on the
  /// node that reads it with the same value (src/cache/download_slots.h): the workers of all
  /// ranks share one link. nullopt: each worker's download_concurrency is its only limit.
  std::optional<uint32_t> node_download_concurrency;
  /// Bytes per stream cache folder: its shard files and index.json (and ferry's small records).
  /// Open refuses one that the index.json files fill, or below four times the largest shard
  /// (raw and compressed together), as Mosaic does.
  std::optional<uint64_t> cache_limit;
  /// A cache_limit must hold the working set of the order - the shards its readers on a node use
  /// between their first and last use, at once (src/order/working_set.h) - in half of it, or
  /// shards would be fetched again and again. By default Plan and Iterate then read the widest
  /// shuffle that fits (a smaller shuffle_block_size, or py1s), saying so once with the
  /// cache_limit that would hold the order asked for; with strict_cache_limit they fail
  /// (kFailedPrecondition) with that message instead.
  bool strict_cache_limit = false;
  /// Read each cache folder's copy of index.json without asking the remote whether it changed
  /// (by default a HEAD per stream at Open revalidates it: include/ferry/cache/shard_cache.h's
  /// LoadIndex): a cache filled earlier stays usable while the remote cannot be reached.
  bool offline = false;
  bool keep_zip = false;
  std::optional<std::string> validate_hash;
  /// A digest record per downloaded shard file, which checks it exactly after a reboot, and
  /// the check of each download against the checksum the store sends with it: ShardCacheOptions'
  /// digest_records and store_checksums. Both on by default; off only to measure their cost.
  bool digest_records = true;
  bool store_checksums = true;
  bool allow_unsafe_types = false;
  /// Shards of remote streams fetched through the other nodes' cache folders (PeerOptions).
  PeerOptions peers;
  /// Samples read before their raw shards are local (not with validate_hash, which needs the
  /// whole shard first): an iterator's first batch (order.batch_size samples), at a cold start,
  /// by range from the remote while the shards download; later samples of a shard still
  /// downloading, from the bytes its download has landed (src/cache/download_progress.h).
  bool read_before_download = true;
  /// Get (random access, `ds[i]`) of a sample whose raw shard is not local: false (the default)
  /// reads the sample by range - the shard's offset table, then the sample - and fetches the
  /// shard whole only once more than kRangedGetsPerShard of its samples were asked for in this
  /// process (a shard asked for twice is likely asked for again, and fetching it whole costs
  /// about as long as two or three reads by range); true fetches the whole shard at the first
  /// access, as Mosaic Streaming does.
  bool download_on_access = false;
};

/// Samples of one shard that Get reads by range before it fetches the shard whole
/// (bench/random_access.sh: 200 random samples of 18 shards of 64 MB took 5x longer at 8).
inline constexpr uint32_t kRangedGetsPerShard = 1;

/// One sample: payload views per column, valid while the Sample (which holds its shard) lives.
struct Sample {
  uint64_t id = 0;      // index in the concatenation of all streams' samples
  uint32_t stream = 0;  // which stream it came from
  std::vector<std::string_view> fields;
  const ShardConfig* config = nullptr;  // column names and encodings
  std::shared_ptr<const void> owner;    // keeps the bytes behind `fields` alive
  /// The file `fields` are views of, when the sample was read from a shard file mapped as
  /// stored (a complete shard in the cache folder, a local dataset's own); null when its bytes
  /// are in memory (a ranged read, a download in progress, a decompressed shard). Lives as long
  /// as `owner`.
  const MappedShardFile* file = nullptr;
};

struct IterateOptions {
  WorldShape world;
  WorkerId worker;
  uint64_t epoch = 0;
  /// Global samples the world already read this epoch (resumption under any world shape with
  /// the same canonical nodes; a multiple of them; see EpochPlan::Create).
  uint64_t resume_from = 0;
  /// Samples of this worker's own sequence already read (exact resumption of one worker under
  /// the same world shape, e.g. DataLoader workers that stopped after different batch counts).
  uint64_t skip = 0;
};

class SampleIterator {
 public:
  virtual ~SampleIterator() = default;
  /// The next sample, nullopt at the end of the epoch, or the error that stopped it (a shard
  /// that cannot be fetched or is corrupt: the message names it).
  virtual Result<std::optional<Sample>> Next() = 0;
  /// Waits up to `timeout` for the download the next Next() would wait for; true when Next
  /// will not wait for one (the shard is local, or the fetch ended - maybe in an error, which
  /// Next returns). For callers that must stay responsive while data arrives: Python checks
  /// for Ctrl+C between such waits. An iterator that cannot tell says true.
  virtual bool AwaitNext(std::chrono::milliseconds /*timeout*/) { return true; }
  /// Samples this worker still has in the epoch.
  virtual uint64_t remaining() const = 0;
};

class StreamingDataset {
 public:
  /// Fetches (or reads) every stream's index.json, checks the options and the streams' columns.
  static Result<std::shared_ptr<StreamingDataset>> Open(StreamingOptions options);
  virtual ~StreamingDataset() = default;

  /// Samples over all streams (before mixing).
  virtual uint64_t num_samples() const = 0;
  /// Samples of one epoch after mixing (before padding to whole world batches).
  virtual uint64_t epoch_samples() const = 0;
  /// Each stream's description, as its cache holds it (one copy per process).
  virtual const std::vector<std::shared_ptr<const DatasetDescription>>& indexes() const = 0;
  /// Per stream, what it gives every epoch. A dataset of one stream that takes all of its
  /// samples need not override it.
  virtual std::vector<StreamWeight> stream_weights() const {
    return {{.proportion = 1, .repeat = 1, .choose = epoch_samples()}};
  }
  virtual const StreamingOptions& options() const = 0;

  /// Random access: sample `id` (over the concatenated streams), fetching its shard if needed.
  /// A stop request ends the wait for that download with kCancelled, and one already requested
  /// never starts it (a shard already local is still read).
  virtual Result<Sample> Get(uint64_t id, std::stop_token stop = {}) = 0;

  /// The plan of one epoch for `world` (the same for every worker).
  virtual Result<std::shared_ptr<const EpochPlan>> Plan(const WorldShape& world, uint64_t epoch,
                                                        uint64_t resume_from = 0) = 0;

  /// An iterator over one worker's samples of one epoch, with prefetching.
  virtual Result<std::unique_ptr<SampleIterator>> Iterate(const IterateOptions& options) = 0;

  // The cache by hand, as Mosaic's dataset offers it. Shards are numbered over all the streams,
  // in order (the shards of stream 0 first). By default (a dataset without a cache of shards)
  // they are kUnimplemented, and the usage is 0.

  /// Bytes in the streams' cache folders now, as Mosaic counts them: each index.json and the
  /// shard files (raw and compressed) present.
  virtual uint64_t CacheUsage() const { return 0; }
  /// Makes `shard` local now, evicting under cache_limit as a download does. With `blocking`
  /// false, a download of it already in progress elsewhere is not waited for.
  virtual Status PrepareShard(size_t shard, bool blocking, std::stop_token stop = {});
  /// Deletes `shard`'s files from its cache folder now (nothing when it is not local).
  /// kFailedPrecondition, deleting nothing, when an iterator (of any process) is reading it or
  /// its stream has no remote: its files are then the only copy.
  virtual Status EvictShard(size_t shard);
  /// Evicts the least recently used shard that can be evicted (see EvictShard) and returns it;
  /// kInvalidArgument when there is none.
  virtual Result<size_t> EvictColdestShard();

 protected:
  StreamingDataset() = default;
};

}  // namespace ferry
