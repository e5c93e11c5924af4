// StreamingDatasetImpl: the StreamingDataset that StreamingDataset::Open returns. It holds each
// stream's index, cache folder and remote; mixes the streams per epoch (the last few mixes kept);
// fits the order to the cache budget; and keeps the recently used shards open for every reader
// (OpenShards). Its StreamIterators (src/stream/stream_iterator.h) call its non-virtual methods
// once per sample: Cached, Open, Read.
//
// Thread-safety: Init runs once, before the dataset is shared; after it, what Init set is read
// only, the mixes are guarded by mu_, and the rest (open shards, counts of readers) is itself
// thread-safe. So all methods other than Init may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "cache/cache_budget.h"
#include "cache/download_progress.h"
#include "cache/peer_server.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/shard_format.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "ferry/stream/streaming_dataset.h"
#include "order/working_set.h"
#include "stream/open_shards.h"
#include "stream/prefetcher.h"
#include "stream/stream_caches.h"
#include "stream/stream_mix.h"

namespace ferry::internal_stream {

struct StreamState {
  StreamSpec spec;
  std::shared_ptr<ObjectStore> remote;  // null: local only
  std::string remote_prefix;            // key of the index folder in `remote`, ending in '/'
  std::unique_ptr<ShardCache> cache;
  std::filesystem::path local;              // the cache folder (or, without a remote, the dataset)
  std::vector<const ShardFormat*> formats;  // per shard: what reads it
  std::vector<uint64_t> shard_samples;
  std::vector<uint64_t> shard_starts;  // first sample of each shard within the stream
  uint64_t first_id = 0;               // first sample of the stream among all streams
  uint64_t disk_bytes = 0;             // its shard files in the cache folder, all of them
  // Its cache folder served to the peers (PeerOptions); gone before `cache`.
  std::unique_ptr<internal_cache::PeerServer::Registration> peer_registration;
};

class StreamingDatasetImpl : public StreamingDataset,
                             public std::enable_shared_from_this<StreamingDatasetImpl> {
 public:
  explicit StreamingDatasetImpl(StreamingOptions options) : options_(std::move(options)) {}

  /// Checks the options, loads every stream's index and opens its cache.
  Status Init();

  uint64_t num_samples() const override { return num_samples_; }
  uint64_t epoch_samples() const override { return epoch_samples_; }
  const std::vector<std::shared_ptr<const DatasetDescription>>& indexes() const override {
    return indexes_;
  }
  const StreamingOptions& options() const override { return options_; }
  std::vector<StreamWeight> stream_weights() const override { return weights_; }

  /// The streams mixed for `epoch`.
  Result<std::shared_ptr<const EpochMix>> Mix(uint64_t epoch);

  Result<std::shared_ptr<const EpochPlan>> Plan(const WorldShape& world, uint64_t epoch,
                                                uint64_t resume_from) override;

  // The mix's virtual shards grouped by stream (they come stream by stream, a stream that gives
  // nothing with none), for a batching method that draws batches from particular streams.
  std::vector<StreamShards> StreamLayout(const EpochMix& mix) const;

  // Bytes a shard takes in its cache folder once fetched.
  uint64_t DiskBytes(uint32_t stream, uint32_t shard) const;
  // The compressed files a cache with these options keeps.
  static std::function<bool(std::string_view)> KeptCompressed(const ShardCacheOptions& cache);

  // The order to read for `world`: the one asked for, or - under a cache_limit that cannot hold
  // its working set - the widest that fits (src/order/working_set.h), said once; with
  // strict_cache_limit an error instead.
  Result<internal_order::WorkingSetFit> FitOrder(const EpochMix& mix, const WorldShape& world);

  // Why `fit` narrowed (or could not fit) the order asked for, and the cache_limit that would
  // hold it.
  std::string DescribeFit(const internal_order::WorkingSetFit& fit,
                          const std::vector<internal_order::StreamFootprint>& footprints,
                          const WorldShape& world) const;

  // The open shard `key`, if one is open (in the recently used set or held by a reader).
  std::shared_ptr<const OpenShard> Cached(const ShardKey& key) { return open_shards_.Find(key); }
  // Drops the open shards whose files were deleted (src/stream/open_shards.h).
  void DrainDeletions() { open_shards_.DrainDeletions(); }

  // The shard mapped and pinned; shared with any other reader of it. Recently used shards stay
  // open (mapped, validated and pinned) so that a shuffled order hopping between shards does not
  // re-open one per sample; how many is bounded in count and, under a cache_limit, in bytes.
  Result<std::shared_ptr<const OpenShard>> Open(const ShardKey& key, ShardHandle handle);

  // Sample `index` of the open shard `key`.
  Result<Sample> Read(const std::shared_ptr<const OpenShard>& shard, const ShardKey& key,
                      uint64_t index) const;

  // True when samples of `key` may be read by range, from the remote or from the bytes its
  // download has landed: a raw shard of a remote stream, in a format read by range, without
  // validate_hash.
  bool RangeReadable(const ShardKey& key) const;
  // The spans of `key`'s samples, read by range once and kept (within kMaxSpanBytes); nullptr
  // where its format cannot say. \pre RangeReadable(key)
  Result<std::shared_ptr<const SampleSpans>> Spans(const ShardKey& key);
  // Sample `index` of `key` read by range through its `spans`: one request.
  Result<Sample> ReadBySpans(const ShardKey& key, const SampleSpans& spans, uint64_t index) const;
  // The download of `key` that some process of the node is running now, to read what it has
  // landed (src/cache/download_progress.h); nullptr when there is none.
  Result<std::unique_ptr<internal_cache::DownloadProgressReader>> OpenLanding(
      const ShardKey& key) const;
  // Sample `index` of `key` read from the bytes `landing` has landed, waiting for them until
  // `deadline` (then kDeadlineExceeded; kUnavailable when the download ended without them).
  Result<std::optional<Sample>> ReadLanded(const internal_cache::DownloadProgressReader& landing,
                                           const ShardKey& key, uint64_t index,
                                           std::chrono::steady_clock::time_point deadline) const;

  Result<Sample> Get(uint64_t id, std::stop_token stop) override;

  Result<std::unique_ptr<SampleIterator>> Iterate(const IterateOptions& o) override;

  uint64_t CacheUsage() const override { return caches_->Usage(); }
  Status PrepareShard(size_t shard, bool blocking, std::stop_token stop) override;
  Status EvictShard(size_t shard) override;
  Result<size_t> EvictColdestShard() override;

  ShardCache* cache(uint32_t stream) const { return streams_[stream].cache.get(); }
  // The readers of the limited cache folders now (the most of any), as iterators last counted.
  void SetReaders(uint32_t readers) { readers_.store(readers); }
  const internal_cache::CacheBudget& budget() const { return budget_; }
  // The folders where readers share a cache_limit that eviction must keep: those of remote
  // streams, when some stream does not fit its cache whole.
  std::vector<std::filesystem::path> LimitedCacheFolders() const;
  // Bytes a shard's download brings (its compressed file, if it has one).
  uint64_t ShardBytes(const ShardKey& key) const;
  size_t num_streams() const { return streams_.size(); }
  double MeanSamplesPerShard() const;

 private:
  // The sample `index` of `key` that a ranged read brought.
  Sample FromRanged(const ShardKey& key, uint64_t index, RangedSample ranged) const;

  // Get's read of sample `index` of `key`, a shard not local, by range: its spans (read once and
  // kept), then its bytes. nullopt when Get should fetch the shard instead: download_on_access,
  // a shard that cannot be read so, or one read so kRangedGetsPerShard times already.
  Result<std::optional<Sample>> GetByRange(const ShardKey& key, uint64_t index);

  // Evicts `key`; when it is pinned and this dataset holds it open, drops that copy (its pin)
  // and tries once more - only then, so that a refused eviction costs no open shard.
  Result<uint64_t> EvictKey(const ShardKey& key);

  // Watches the cache folders of remote streams for deleted shard files, from the first shard
  // opened on (a process that only plans, a DataLoader's parent, never needs it). Without a
  // remote a deleted shard cannot be fetched again: what is open reads on.
  void StartWatch();

  const StreamingOptions options_;
  std::shared_ptr<internal_cache::PeerServer> peer_server_;  // outlives the streams' registrations
  std::vector<StreamState> streams_;
  std::vector<std::shared_ptr<const DatasetDescription>> indexes_;
  internal_cache::CacheBudget budget_;
  std::atomic<bool> warned_fit_{false};
  uint64_t num_samples_ = 0;
  uint64_t epoch_samples_ = 0;
  // Per stream: the compressed files its cache keeps (ShardCacheOptions::keep_zip_of), or null.
  std::vector<std::function<bool(std::string_view)>> keep_zip_of_;
  // The epoch last asked for (Iterate), which per-epoch egress budgets go by; shared with the
  // mirrors' stores.
  std::shared_ptr<std::atomic<uint64_t>> reading_epoch_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  Mutex mu_;
  std::map<uint64_t, std::shared_ptr<const EpochMix>> mixes_ GUARDED_BY(mu_);
  // The spans read so far (within kMaxSpanBytes) and the samples GetByRange read per shard.
  struct RangedShard {
    std::shared_ptr<const SampleSpans> spans;
    uint32_t gets = 0;
  };
  std::map<ShardKey, RangedShard> ranged_ GUARDED_BY(mu_);
  uint64_t span_bytes_ GUARDED_BY(mu_) = 0;
  std::vector<StreamWeight> weights_;  // per stream, set by Init
  std::atomic<uint32_t> readers_{1};
  // The most a cache folder holds besides shards, as the plan counts it (PlannedOtherBytes).
  uint64_t other_bytes_ = 0;

  std::optional<StreamCaches> caches_;  // set by Init
  std::atomic<bool> watching_{false};
  OpenShards open_shards_;  // last: its watch calls into it
};

}  // namespace ferry::internal_stream
