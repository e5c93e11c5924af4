#include "ferry/stream/streaming_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/human_size.h"
#include "base/log.h"
#include "base/mutex.h"
#include "cache/cache_budget.h"
#include "cache/download_slots.h"
#include "cache/reader_registry.h"
#include "cache/shard_downloader.h"
#include "ferry/format/shard_reader.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "ferry/stream/shard_cache.h"
#include "order/working_set.h"
#include "storage/instrumented_store.h"
#include "stream/open_shards.h"
#include "stream/prefetcher.h"
#include "stream/remote_sample_reader.h"
#include "stream/stream_caches.h"
#include "stream/stream_mix.h"

namespace ferry {
namespace {

using internal_stream::EpochMix;
using internal_stream::OpenShard;
using internal_stream::Prefetcher;
using internal_stream::ShardKey;

struct StreamState {
  StreamSpec spec;
  std::shared_ptr<ObjectStore> remote;  // null: local only
  std::string remote_prefix;            // key of the index folder in `remote`, ending in '/'
  std::unique_ptr<ShardCache> cache;
  std::filesystem::path local;  // the cache folder (or, without a remote, the dataset)
  std::vector<uint64_t> shard_samples;
  std::vector<uint64_t> shard_starts;  // first sample of each shard within the stream
  uint64_t first_id = 0;               // first sample of the stream among all streams
  uint64_t disk_bytes = 0;             // its shard files in the cache folder, all of them
};

class StreamingDatasetImpl : public StreamingDataset,
                             public std::enable_shared_from_this<StreamingDatasetImpl> {
 public:
  explicit StreamingDatasetImpl(StreamingOptions options) : options_(std::move(options)) {}

  Status Init() {
    if (options_.streams.empty()) return InvalidArgumentError("no streams given");
    // The one check of each option (the CLI and Python translate, and leave ranges to it).
    // Zero would silently turn prefetching off.
    if (options_.download_concurrency == 0u) {
      return InvalidArgumentError(
          "download_concurrency must be at least 1 (or unset: auto), not 0");
    }
    if (options_.download_parts) {
      FERRY_RETURN_IF_ERROR(internal_cache::CheckDownloadParts(*options_.download_parts));
    }
    if (options_.node_download_concurrency) {
      FERRY_RETURN_IF_ERROR(
          internal_cache::CheckDownloadSlotCount(*options_.node_download_concurrency));
    }
    if (options_.predownload == 0u) {
      return InvalidArgumentError("predownload must be at least 1 (or unset: auto), not 0");
    }
    uint64_t first_id = 0;
    bool fits = true;  // every stream fits its cache_limit whole (or there is none)
    for (size_t s = 0; s < options_.streams.size(); ++s) {
      const StreamSpec& spec = options_.streams[s];
      if (spec.local.empty()) {
        return InvalidArgumentError(fmt::format("stream {}: a local folder is required", s));
      }
      StreamState st;
      st.spec = spec;
      std::filesystem::path local = spec.local;
      if (!spec.split.empty()) local /= spec.split;
      st.local = local;
      if (!spec.remote.empty()) {
        FERRY_ASSIGN_OR_RETURN(StoreAndKey opened, OpenUrl(spec.remote));
        std::string prefix = opened.key;
        if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
        if (!spec.split.empty()) prefix += spec.split + "/";
        // A remote that is the local folder itself (Mosaic reads it in place) is no remote: a
        // cache of it would evict - delete - the only copy of the data.
        std::error_code ec;
        if (auto path = opened.store->LocalPath(prefix);
            !path || !std::filesystem::equivalent(*path, local, ec)) {
          st.remote = Instrument(opened.store);
          st.remote_prefix = prefix;
        }
      }
      FERRY_ASSIGN_OR_RETURN(Index index, LoadIndex(st.remote.get(), st.remote_prefix, local,
                                                    {.offline = options_.offline}));
      for (size_t k = 0; k < index.shards.size(); ++k) {
        const ShardConfig& config = *index.shards[k].config;
        if (config.HasUnsafeColumn() && !options_.allow_unsafe_types) {
          size_t c = 0;
          while (!config.column_encodings[c].unsafe()) ++c;
          // "contains an unsafe type" is the reference's wording, which scripts match on.
          return InvalidArgumentError(fmt::format(
              "stream {} ({}): shard {}: Column {} contains an unsafe type: {}, which runs "
              "arbitrary code when unpickled; set allow_unsafe_types=True to read it",
              s, spec.remote.empty() ? spec.local : spec.remote, k, config.column_names[c],
              config.column_encodings[c].text()));
        }
      }
      st.first_id = first_id;
      uint64_t n = 0;
      for (const auto& shard : index.shards) {
        st.shard_starts.push_back(n);
        st.shard_samples.push_back(shard.samples);
        n += shard.samples;
      }
      if (n == 0) {
        // The reference's words (and class: a RuntimeError in Python).
        return FailedPreconditionError(
            fmt::format("Stream contains no samples: {}", (local / "index.json").string()));
      }
      first_id += n;
      ShardCacheOptions cache_options;
      cache_options.local = local;
      cache_options.cache_limit = options_.cache_limit;
      cache_options.keep_zip = options_.keep_zip;
      cache_options.validate_hash = options_.validate_hash;
      cache_options.download_parts = options_.download_parts;
      cache_options.node_download_concurrency = options_.node_download_concurrency;
      indexes_.push_back(index);
      for (size_t k = 0; k < index.shards.size(); ++k) {
        st.disk_bytes += DiskBytes(static_cast<uint32_t>(s), static_cast<uint32_t>(k));
      }
      FERRY_ASSIGN_OR_RETURN(
          st.cache, ShardCache::Open(st.remote, st.remote_prefix, std::move(index), cache_options));
      // The folder holds its index.json (and ferry's records) beside the shards.
      other_bytes_ = std::max(other_bytes_, st.cache->OtherBytes());
      if (options_.cache_limit && st.disk_bytes + st.cache->OtherBytes() > *options_.cache_limit) {
        fits = false;
      }
      streams_.push_back(std::move(st));
    }
    num_samples_ = first_id;
    std::vector<internal_stream::StreamCache> caches;
    for (const StreamState& st : streams_) {
      caches.push_back(
          {.cache = st.cache.get(), .local = st.local, .remote = st.remote != nullptr});
    }
    caches_.emplace(std::move(caches));
    if (options_.cache_limit) FERRY_RETURN_IF_ERROR(caches_->CheckLimit(*options_.cache_limit));
    // The budget shares out what the limit leaves for shards.
    budget_ = internal_cache::CacheBudget(
        options_.cache_limit
            ? std::optional<uint64_t>(*options_.cache_limit -
                                      std::min(*options_.cache_limit, other_bytes_))
            : std::nullopt,
        fits);
    std::vector<uint64_t> stream_samples;
    for (const StreamState& st : streams_) {
      stream_samples.push_back(
          st.shard_starts.empty() ? 0 : st.shard_starts.back() + st.shard_samples.back());
    }
    FERRY_ASSIGN_OR_RETURN(
        internal_stream::ResolvedWeights weights,
        internal_stream::ResolveWeights(stream_samples, options_.streams, options_.epoch_size,
                                        options_.order.seed));
    weights_ = std::move(weights.streams);
    FERRY_ASSIGN_OR_RETURN(auto mix, Mix(0));
    epoch_samples_ = mix->total;
    return Status::Ok();
  }

  uint64_t num_samples() const override { return num_samples_; }
  uint64_t epoch_samples() const override { return epoch_samples_; }
  const std::vector<Index>& indexes() const override { return indexes_; }
  const StreamingOptions& options() const override { return options_; }
  std::vector<StreamWeight> stream_weights() const override { return weights_; }

  Result<std::shared_ptr<const EpochMix>> Mix(uint64_t epoch) {
    MutexLock lock(mu_);
    if (auto it = mixes_.find(epoch); it != mixes_.end()) return it->second;
    std::vector<std::vector<uint64_t>> samples;
    for (const auto& st : streams_) samples.push_back(st.shard_samples);
    std::vector<uint64_t> choose;
    for (const StreamWeight& w : weights_) choose.push_back(w.choose);
    FERRY_ASSIGN_OR_RETURN(EpochMix mix,
                           internal_stream::MixStreams(samples, choose, options_.sampling_method,
                                                       options_.order.seed, epoch));
    if (mix.total == 0) return InvalidArgumentError("the streams give no samples this epoch");
    auto shared = std::make_shared<const EpochMix>(std::move(mix));
    if (mixes_.size() >= 4) mixes_.erase(mixes_.begin());  // epochs go forward; keep a few
    mixes_[epoch] = shared;
    return shared;
  }

  Result<std::shared_ptr<const EpochPlan>> Plan(const WorldShape& world, uint64_t epoch,
                                                uint64_t resume_from) override {
    FERRY_ASSIGN_OR_RETURN(auto mix, Mix(epoch));
    FERRY_ASSIGN_OR_RETURN(const internal_order::WorkingSetFit fit, FitOrder(*mix, world));
    return EpochPlan::Create(mix->Counts(), fit.order, world, epoch, resume_from,
                             StreamLayout(*mix));
  }

  // The mix's virtual shards grouped by stream (they come stream by stream, a stream that gives
  // nothing with none), for a batching method that draws batches from particular streams.
  std::vector<StreamShards> StreamLayout(const EpochMix& mix) const {
    if (options_.order.batching == BatchingMethod::kRandom) return {};
    std::vector<StreamShards> out(streams_.size());
    for (size_t s = 0; s < out.size(); ++s) out[s].proportion = weights_[s].proportion;
    for (const internal_stream::VirtualShard& vs : mix.shards) ++out[vs.stream].shards;
    return out;
  }

  // Bytes a shard takes in its cache folder once fetched.
  uint64_t DiskBytes(uint32_t stream, uint32_t shard) const {
    const ShardEntry& e = indexes_[stream].shards[shard];
    return e.raw_data.bytes + (options_.keep_zip && e.zip_data ? e.zip_data->bytes : 0);
  }

  // The order to read for `world`: the one asked for, or - under a cache_limit that cannot hold
  // its working set - the widest that fits (src/order/working_set.h), said once; with
  // strict_cache_limit an error instead.
  Result<internal_order::WorkingSetFit> FitOrder(const EpochMix& mix, const WorldShape& world) {
    internal_order::WorkingSetFit fit;
    fit.order = options_.order;
    if (!budget_.limited()) return fit;
    std::vector<internal_order::StreamFootprint> footprints(streams_.size());
    for (const internal_stream::VirtualShard& vs : mix.shards) {
      internal_order::StreamFootprint& f = footprints[vs.stream];
      const uint64_t bytes = DiskBytes(vs.stream, vs.shard);
      f.samples += vs.count;
      f.bytes += bytes;
      f.max_shard_bytes = std::max(f.max_shard_bytes, bytes);
    }
    for (size_t st = 0; st < streams_.size(); ++st) {
      // A stream its cache holds whole is never evicted: its working set takes no room.
      if (streams_[st].disk_bytes <= *budget_.limit()) {
        footprints[st].bytes = footprints[st].max_shard_bytes = 0;
      }
    }
    fit = internal_order::NarrowToFit(footprints, options_.order, world, budget_.WorkingSetRoom());
    if (!fit.narrowed && fit.fits) return fit;
    const std::string message = DescribeFit(fit, footprints, world);
    if (options_.strict_cache_limit) return FailedPreconditionError(message);
    if (!warned_fit_.exchange(true)) {
      Log().warn("{}", message);
    } else {
      Log().debug("{}", message);
    }
    return fit;
  }

  std::string DescribeFit(const internal_order::WorkingSetFit& fit,
                          const std::vector<internal_order::StreamFootprint>& footprints,
                          const WorldShape& world) const {
    const OrderOptions& asked = options_.order;
    // The smallest limit that holds the order as asked: its working set in the limit's room, or
    // the largest stream that does not fit whole (then nothing is ever evicted) - beside the
    // index.json and ferry's records that the folder holds too.
    uint64_t largest_stream = 0;
    for (const StreamState& st : streams_) {
      if (st.disk_bytes > *budget_.limit())
        largest_stream = std::max(largest_stream, st.disk_bytes);
    }
    const auto limit_for = [&](const internal_order::WorkingSet& ws) {
      return std::min(budget_.LimitToHold(ws.Largest()), largest_stream) + other_bytes_;
    };
    OrderOptions py1s = asked;
    py1s.algo = ShuffleAlgo::kPy1s;
    const uint64_t py1s_limit =
        limit_for(internal_order::EstimateWorkingSet(footprints, py1s, world));
    std::string text = fmt::format(
        "cache_limit {} is too small for the order asked for: shuffle_algo {}{} keeps up to {} "
        "of shards in use at once on this node, and a cache_limit of {} would hold it",
        FormatBytes(*options_.cache_limit), ShuffleAlgoName(asked.algo),
        asked.algo == ShuffleAlgo::kPy1s
            ? std::string()
            : fmt::format(" with shuffle_block_size {}", asked.shuffle_block_size),
        FormatBytes(fit.asked.Largest()), FormatBytes(limit_for(fit.asked)));
    if (asked.algo != ShuffleAlgo::kPy1s) {
      text += fmt::format(" (shuffle_algo py1s needs {})", FormatBytes(py1s_limit));
    }
    const std::string narrowed =
        fit.order.algo == ShuffleAlgo::kPy1s
            ? std::string("shuffle_algo py1s")
            : fmt::format("shuffle_algo {} with shuffle_block_size {}",
                          ShuffleAlgoName(fit.order.algo), fit.order.shuffle_block_size);
    if (options_.strict_cache_limit) {
      return text + fmt::format(
                        "; with strict_cache_limit this is an error: raise cache_limit, or choose "
                        "{} (what fits), or a smaller shuffle_block_size",
                        fit.fits ? narrowed : std::string("a larger cache_limit"));
    }
    if (!fit.fits) {
      return text + fmt::format(
                        "; even the narrowest order does not fit: reading with {}, which fetches "
                        "some shards more than once per epoch - raise cache_limit to at least {}",
                        narrowed, FormatBytes(py1s_limit));
    }
    return text + fmt::format(
                      "; reading with {} instead, which fits (the same on every rank and on "
                      "resumption; strict_cache_limit refuses instead of narrowing)",
                      narrowed);
  }

  // The open shard `key`, if one is open (in the recently used set or held by a reader).
  std::shared_ptr<const OpenShard> Cached(const ShardKey& key) { return open_shards_.Find(key); }
  // Drops the open shards whose files were deleted (src/stream/open_shards.h).
  void DrainDeletions() { open_shards_.DrainDeletions(); }

  // The shard mapped and pinned; shared with any other reader of it. Recently used shards stay
  // open (mapped, validated and pinned) so that a shuffled order hopping between shards does not
  // re-open one per sample; how many is bounded in count and, under a cache_limit, in bytes.
  Result<std::shared_ptr<const OpenShard>> Open(const ShardKey& key, ShardHandle handle) {
    if (auto shard = Cached(key)) return shard;
    StartWatch();
    const ShardEntry& entry = indexes_[key.stream].shards[key.shard];
    auto opened = MdsShardReader::Open(handle.path(), entry);
    // Deleted since the cache looked (by someone else: it is pinned against eviction): fetched
    // again, a few times, as Mosaic retries.
    for (int retry = 0; !opened && opened.error().code() == StatusCode::kNotFound &&
                        streams_[key.stream].remote && retry < 3;
         ++retry) {
      FERRY_ASSIGN_OR_RETURN(handle, streams_[key.stream].cache->Acquire(key.shard));
      opened = MdsShardReader::Open(handle.path(), entry);
    }
    FERRY_ASSIGN_OR_RETURN(MdsShardReader reader, std::move(opened));
    metrics::GetCounter("/ferry/stream/shard_opens").Add();
    auto shard = std::make_shared<const OpenShard>(std::move(handle), std::move(reader));
    // Under a cache_limit the recently used shards kept open are pinned, shared by every reader
    // of the cache folder: all of them together keep a quarter of it open behind them, so that
    // eviction still finds room beside what they fetch ahead (half, shared alike; the race test
    // in tests/integration/stream_test.cc). Not when every stream fits its cache whole: nothing
    // is ever evicted then, and a shuffled order would re-open a shard for nearly every sample
    // (epoch 2 at 0.3 of `cat`).
    open_shards_.Add(key, shard, entry.raw_data.bytes, budget_.OpenBytesPerReader(readers_.load()));
    return shard;
  }

  Result<Sample> Read(const std::shared_ptr<const OpenShard>& shard, const ShardKey& key,
                      uint64_t index) const {
    Sample sample;
    sample.stream = key.stream;
    sample.id =
        streams_[key.stream].first_id + streams_[key.stream].shard_starts[key.shard] + index;
    sample.config = &shard->reader.config();
    sample.fields.resize(shard->reader.num_columns());
    FERRY_RETURN_IF_ERROR(shard->reader.ReadFields(static_cast<uint32_t>(index), sample.fields));
    sample.owner = shard;
    return sample;
  }

  // Sample `index` of a raw shard that is still being downloaded, read with ranged GETs.
  Result<std::optional<Sample>> ReadDirect(const ShardKey& key, uint64_t index) const {
    const StreamState& st = streams_[key.stream];
    const ShardEntry& entry = indexes_[key.stream].shards[key.shard];
    // Ranged reads cannot be checked against the shard's hash: with validate_hash, every sample
    // comes from a verified, complete shard.
    if (!options_.read_before_download || !st.remote || entry.zip_data || options_.validate_hash) {
      return std::nullopt;
    }
    FERRY_ASSIGN_OR_RETURN(
        std::string record,
        internal_stream::ReadRemoteRecord(*st.remote, st.remote_prefix + entry.raw_data.basename,
                                          entry, index));
    auto owner = std::make_shared<const std::string>(std::move(record));
    Sample sample;
    sample.stream = key.stream;
    sample.id = st.first_id + st.shard_starts[key.shard] + index;
    sample.config = entry.config.get();
    sample.fields.resize(entry.config->column_names.size());
    FERRY_RETURN_IF_ERROR(
        SplitRecord(*entry.config, *owner, sample.fields)
            .WithContext(st.remote->ToUrl(st.remote_prefix + entry.raw_data.basename)));
    sample.owner = owner;
    return std::optional<Sample>(std::move(sample));
  }

  Result<Sample> Get(uint64_t id, std::stop_token stop) override {
    if (id >= num_samples_) {
      return OutOfRangeError(
          fmt::format("sample {} is past the end ({} samples)", id, num_samples_));
    }
    size_t s = 0;
    while (s + 1 < streams_.size() && streams_[s + 1].first_id <= id) ++s;
    const StreamState& st = streams_[s];
    const uint64_t in_stream = id - st.first_id;
    const auto it = std::upper_bound(st.shard_starts.begin(), st.shard_starts.end(), in_stream);
    size_t k = static_cast<size_t>(it - st.shard_starts.begin()) - 1;
    while (st.shard_samples[k] == 0) --k;
    const ShardKey key{static_cast<uint32_t>(s), static_cast<uint32_t>(k)};
    open_shards_.NoticeDeletions();  // a deleted shard is fetched again, not read from its mapping
    FERRY_ASSIGN_OR_RETURN(ShardHandle handle, st.cache->Acquire(k, stop));
    FERRY_ASSIGN_OR_RETURN(auto shard, Open(key, std::move(handle)));
    return Read(shard, key, in_stream - st.shard_starts[k]);
  }

  Result<std::unique_ptr<SampleIterator>> Iterate(const IterateOptions& o) override;

  uint64_t CacheUsage() const override { return caches_->Usage(); }

  Status PrepareShard(size_t shard, bool blocking, std::stop_token stop) override {
    FERRY_ASSIGN_OR_RETURN(const ShardKey key, caches_->Locate(shard));
    return streams_[key.stream].cache->Prepare(key.shard, blocking, stop);
  }

  Status EvictShard(size_t shard) override {
    FERRY_ASSIGN_OR_RETURN(const ShardKey key, caches_->Locate(shard));
    return EvictKey(key).status();
  }

  Result<size_t> EvictColdestShard() override {
    return caches_->EvictColdest([this](const ShardKey& key) { return EvictKey(key); });
  }

  ShardCache* cache(uint32_t stream) const { return streams_[stream].cache.get(); }
  // The folders where readers share a cache_limit that eviction must keep: those of remote
  // streams, when some stream does not fit its cache whole.
  // The readers of the limited cache folders now (the most of any), as iterators last counted.
  void SetReaders(uint32_t readers) { readers_.store(readers); }
  const internal_cache::CacheBudget& budget() const { return budget_; }
  std::vector<std::filesystem::path> LimitedCacheFolders() const {
    std::vector<std::filesystem::path> folders;
    if (!budget_.limited()) return folders;
    for (const StreamState& st : streams_) {
      if (st.remote) folders.push_back(st.local);
    }
    return folders;
  }
  uint64_t ShardBytes(const ShardKey& key) const {
    const ShardEntry& e = indexes_[key.stream].shards[key.shard];
    return e.zip_data ? e.zip_data->bytes : e.raw_data.bytes;
  }
  size_t num_streams() const { return streams_.size(); }
  double MeanSamplesPerShard() const {
    size_t shards = 0;
    for (const Index& index : indexes_) shards += index.shards.size();
    return shards == 0 ? 0 : static_cast<double>(num_samples_) / static_cast<double>(shards);
  }

 private:
  const StreamingOptions options_;
  std::vector<StreamState> streams_;
  std::vector<Index> indexes_;
  internal_cache::CacheBudget budget_;
  std::atomic<bool> warned_fit_{false};
  uint64_t num_samples_ = 0;
  uint64_t epoch_samples_ = 0;
  Mutex mu_;
  std::map<uint64_t, std::shared_ptr<const EpochMix>> mixes_ GUARDED_BY(mu_);
  std::vector<StreamWeight> weights_;  // per stream, set by Init
  std::atomic<uint32_t> readers_{1};
  uint64_t other_bytes_ = 0;  // the most a cache folder holds besides shards (OtherBytes)

  // Evicts `key`; when it is pinned and this dataset holds it open, drops that copy (its pin)
  // and tries once more - only then, so that a refused eviction costs no open shard.
  Result<uint64_t> EvictKey(const ShardKey& key) {
    auto evicted = streams_[key.stream].cache->Evict(key.shard);
    if (evicted.ok() || evicted.status().code() != StatusCode::kFailedPrecondition ||
        !streams_[key.stream].remote || !open_shards_.Find(key)) {
      return evicted;
    }
    open_shards_.Drop(key, false);
    return streams_[key.stream].cache->Evict(key.shard);
  }

  // Watches the cache folders of remote streams for deleted shard files, from the first shard
  // opened on (a process that only plans, a DataLoader's parent, never needs it). Without a
  // remote a deleted shard cannot be fetched again: what is open reads on.
  void StartWatch() {
    if (watching_.exchange(true)) return;
    std::unordered_map<std::string, ShardKey> files;
    for (uint32_t s = 0; s < streams_.size(); ++s) {
      if (!streams_[s].remote) continue;
      for (uint32_t k = 0; k < indexes_[s].shards.size(); ++k) {
        files[(streams_[s].local / indexes_[s].shards[k].raw_data.basename).string()] = {s, k};
      }
    }
    open_shards_.Watch(files);
  }

  std::optional<internal_stream::StreamCaches> caches_;  // set by Init
  std::atomic<bool> watching_{false};
  internal_stream::OpenShards open_shards_;  // last: its watch calls into it
};

class StreamIterator : public SampleIterator {
 public:
  StreamIterator(std::shared_ptr<StreamingDatasetImpl> dataset,
                 std::shared_ptr<const EpochPlan> plan, std::shared_ptr<const EpochMix> mix,
                 WorkerCursor cursor, const internal_order::WorkingSet& working_set)
      : dataset_(std::move(dataset)),
        plan_(std::move(plan)),
        mix_(std::move(mix)),
        cursor_(cursor) {
    std::vector<ShardCache*> caches;
    for (uint32_t s = 0; s < dataset_->num_streams(); ++s) caches.push_back(dataset_->cache(s));
    internal_stream::PrefetchOptions prefetch;
    prefetch.predownload = dataset_->options().predownload;
    prefetch.concurrency = dataset_->options().download_concurrency;
    prefetch.max_bytes_in_flight = dataset_->options().max_bytes_in_flight;
    prefetch.cache_limited = dataset_->options().cache_limit.has_value();
    prefetch.samples_per_shard = dataset_->MeanSamplesPerShard();
    prefetch.node_download_concurrency =
        dataset_->options().node_download_concurrency.value_or(UINT32_MAX);
    // What is fetched ahead is pinned: it gets what the cache budget leaves beside the order's
    // working set and the open shards, shared by all the readers of a folder (the node's
    // workers).
    const internal_cache::CacheBudget& budget = dataset_->budget();
    const uint64_t live = working_set.Largest();
    prefetch.max_bytes_in_flight =
        std::min(prefetch.max_bytes_in_flight, budget.AheadBytesPerReader(1, live));
    if (budget.limited()) {
      // Registered while the prefetcher (which owns the budget) lives.
      auto readers =
          std::make_shared<internal_cache::FolderReaders>(dataset_->LimitedCacheFolders());
      if (!readers->empty()) {
        prefetch.byte_budget = [readers, budget, live, dataset = dataset_.get()] {
          const uint32_t most = readers->Most();
          dataset->SetReaders(most);
          return budget.AheadBytesPerReader(most, live);
        };
      }
    }
    prefetcher_ = std::make_unique<Prefetcher>(
        cursor, [this](uint64_t sample) { return Resolve(sample).first; },
        [this](const ShardKey& key) { return dataset_->ShardBytes(key); }, std::move(caches),
        prefetch);
  }

  Result<std::optional<Sample>> Next() override {
    const bool first = std::exchange(first_, false);
    auto sample = NextSample(first);
    // However the first sample came (by range, from a local shard) or failed: a cold start may
    // now fetch at full width.
    if (first) prefetcher_->FirstSampleRead();
    return sample;
  }

  bool AwaitNext(std::chrono::milliseconds timeout) override {
    // The first sample of a cold start is read by range: a round trip or two, not a shard.
    if (first_) return true;
    const auto v = cursor_.Peek(0);
    if (!v) return true;
    const ShardKey key = Resolve(*v).first;
    if ((current_ && current_key_ == key) || dataset_->Cached(key)) return true;
    return prefetcher_->AwaitFetched(key, cursor_.taken(), timeout);  // Next's position
  }

  uint64_t remaining() const override { return cursor_.remaining(); }

 private:
  Result<std::optional<Sample>> NextSample(bool first) {
    const auto v = cursor_.Next();
    if (!v) return std::optional<Sample>();
    prefetcher_->Advance(cursor_.taken() - 1);  // the position of the sample being read
    const auto [key, index] = Resolve(*v);
    // Its file was deleted from the cache folder: fetch it again (as Mosaic does) rather than
    // read on from a mapping of a file that is gone.
    if (drain_.Due()) dataset_->DrainDeletions();
    if (current_ && current_->deleted.load(std::memory_order_relaxed)) current_.reset();
    if (!current_ || current_key_ != key) {
      if (auto open = dataset_->Cached(key)) {
        current_ = std::move(open);
        current_key_ = key;
      }
    }
    if (!current_ || current_key_ != key) {
      if (first && !prefetcher_->Warm() && !prefetcher_->Ready(key) &&
          !dataset_->cache(key.stream)->IsLocal(key.shard)) {
        // Cold start, nothing local yet: read the first sample with ranged GETs rather than wait
        // for a whole shard, while the shard itself is fetched. Only the first: each direct read
        // costs a round trip, and one after another they would be slower than the shards.
        prefetcher_->Request(key);
        auto direct = dataset_->ReadDirect(key, index);
        if (direct && *direct) return std::move(*direct);
        // The shard is on its way: a failed ranged read costs the wait for it, not the sample.
        if (!direct) {
          Log().warn("reading the first sample by range failed, waiting for its shard: {}",
                     direct.status().ToString());
        }
      }
      FERRY_ASSIGN_OR_RETURN(ShardHandle handle, prefetcher_->Wait(key));
      FERRY_ASSIGN_OR_RETURN(current_, dataset_->Open(key, std::move(handle)));
      current_key_ = key;
    }
    FERRY_ASSIGN_OR_RETURN(Sample sample, dataset_->Read(current_, key, index));
    metrics::GetCounter("/ferry/stream/samples").Add();
    return std::optional<Sample>(std::move(sample));
  }

  // The shard and in-shard index of a plan sample.
  std::pair<ShardKey, uint64_t> Resolve(uint64_t sample) const {
    const auto [v, offset] = plan_->Locate(sample);
    const internal_stream::VirtualShard& vs = mix_->shards[v];
    return {ShardKey{vs.stream, vs.shard}, vs.SampleInShard(offset)};
  }

  std::shared_ptr<StreamingDatasetImpl> dataset_;
  std::shared_ptr<const EpochPlan> plan_;
  std::shared_ptr<const EpochMix> mix_;
  WorkerCursor cursor_;
  std::shared_ptr<const OpenShard> current_;
  ShardKey current_key_;
  bool first_ = true;                       // no sample returned yet
  internal_stream::DrainEvery drain_;       // when to hear of deleted shards
  std::unique_ptr<Prefetcher> prefetcher_;  // last: its threads use the members above
};

Result<std::unique_ptr<SampleIterator>> StreamingDatasetImpl::Iterate(const IterateOptions& o) {
  FERRY_ASSIGN_OR_RETURN(auto mix, Mix(o.epoch));
  FERRY_ASSIGN_OR_RETURN(const internal_order::WorkingSetFit fit, FitOrder(*mix, o.world));
  FERRY_ASSIGN_OR_RETURN(auto plan, EpochPlan::Create(mix->Counts(), fit.order, o.world, o.epoch,
                                                      o.resume_from, StreamLayout(*mix)));
  FERRY_ASSIGN_OR_RETURN(WorkerCursor cursor, plan->Worker(o.worker));
  cursor.Skip(o.skip);
  return std::unique_ptr<SampleIterator>(
      new StreamIterator(shared_from_this(), std::move(plan), std::move(mix), cursor, fit.used));
}

}  // namespace

Status StreamingDataset::PrepareShard(size_t shard, bool, std::stop_token) {
  return UnimplementedError(fmt::format("shard {}: this dataset has no shard cache", shard));
}

Status StreamingDataset::EvictShard(size_t shard) {
  return UnimplementedError(fmt::format("shard {}: this dataset has no shard cache", shard));
}

Result<size_t> StreamingDataset::EvictColdestShard() {
  return UnimplementedError("this dataset has no shard cache");
}

Result<std::shared_ptr<StreamingDataset>> StreamingDataset::Open(StreamingOptions options) {
  auto dataset = std::make_shared<StreamingDatasetImpl>(std::move(options));
  FERRY_RETURN_IF_ERROR(dataset->Init());
  return std::shared_ptr<StreamingDataset>(std::move(dataset));
}

}  // namespace ferry
