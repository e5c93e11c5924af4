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
#include "base/run_each.h"
#include "cache/cache_budget.h"
#include "cache/cache_layout.h"
#include "cache/download_slots.h"
#include "cache/eviction.h"
#include "cache/shard_downloader.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/shard_format.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "format/shard_pattern.h"
#include "order/working_set.h"
#include "storage/instrumented_store.h"
#include "stream/open_shards.h"
#include "stream/stream_caches.h"
#include "stream/stream_iterator.h"
#include "stream/stream_mirrors.h"
#include "stream/stream_mix.h"
#include "stream/stream_peers.h"
#include "stream/streaming_dataset_impl.h"

namespace ferry {
namespace internal_stream {
namespace {

// Index loads at once when a dataset has many streams: each is a round trip or two (a HEAD of a
// cached index, a GET of a new one), which a thousand streams must not wait for in turn.
constexpr size_t kIndexLoadsAtOnce = 64;

}  // namespace

Status StreamingDatasetImpl::Init() {
  if (options_.streams.empty()) return InvalidArgumentError("no streams given");
  // The one check of each option (the CLI and Python translate, and leave ranges to it).
  // Zero would silently turn prefetching off.
  if (options_.download_concurrency == 0u) {
    return InvalidArgumentError("download_concurrency must be at least 1 (or unset: auto), not 0");
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
  // Each stream's store, folders and cache settings, then the indexes, kIndexLoadsAtOnce at a
  // time, then the rest in stream order (the first stream's error is the one reported).
  struct PreparedStream {
    StreamState st;
    std::vector<std::string> tar_names;  // a shard pattern's tars, in its order
    ShardCacheOptions cache_options;
    std::shared_ptr<IndexSizes> mirror_sizes;  // of a stream with mirrors: filled once loaded
    std::string index_version;                 // of a stream with mirrors (OpenedMirrors)
  };
  std::vector<PreparedStream> prepared;
  for (size_t s = 0; s < options_.streams.size(); ++s) {
    const StreamSpec& spec = options_.streams[s];
    if (spec.local.empty()) {
      return InvalidArgumentError(fmt::format("stream {}: a local folder is required", s));
    }
    StreamState st;
    st.spec = spec;
    std::shared_ptr<IndexSizes> mirror_sizes;
    std::string index_version;
    std::filesystem::path local = spec.local;
    if (!spec.split.empty()) local /= spec.split;
    st.local = local;
    // WebDataset's way of naming shards: a brace pattern or "::" list of tars in one folder.
    std::string remote_url = spec.remote;
    std::vector<std::string> tar_names;
    if (!spec.remote.empty() && internal_format::IsShardPattern(spec.remote)) {
      FERRY_ASSIGN_OR_RETURN(internal_format::ShardSelection selection,
                             internal_format::ParseShardPattern(spec.remote));
      if (!spec.split.empty()) {
        return InvalidArgumentError(
            fmt::format("stream {} ({}): a shard pattern names its shards; `split` does not apply",
                        s, spec.remote));
      }
      remote_url = std::move(selection.folder);
      tar_names = std::move(selection.shards);
    }
    if (!spec.mirrors.empty() || !spec.egress.empty()) {
      if (spec.remote.empty() || !tar_names.empty()) {
        return InvalidArgumentError(fmt::format(
            "stream {}: mirrors and egress accounting need a remote that is a dataset's folder "
            "(not a shard pattern)",
            s));
      }
      FERRY_ASSIGN_OR_RETURN(OpenedMirrors opened,
                             OpenMirrors(spec, local, options_.offline,
                                         [epoch = reading_epoch_] { return epoch->load(); }));
      st.remote = std::move(opened.store);
      mirror_sizes = std::move(opened.sizes);
      index_version = std::move(opened.index_version);
    } else if (!spec.remote.empty()) {
      FERRY_ASSIGN_OR_RETURN(StoreAndKey opened, OpenUrl(remote_url));
      std::string prefix = DatasetFolder(std::move(opened.key), spec.split);
      // A remote that is the local folder itself (Mosaic reads it in place) is no remote: a
      // cache of it would evict - delete - the only copy of the data.
      if (!IsTheLocalFolder(*opened.store, prefix, local)) {
        st.remote = Instrument(opened.store);
        st.remote_prefix = prefix;
      }
    }
    ShardCacheOptions cache_options;
    cache_options.local = local;
    cache_options.cache_limit = options_.cache_limit;
    cache_options.keep_zip = options_.keep_zip;
    cache_options.validate_hash = options_.validate_hash;
    cache_options.download_parts = options_.download_parts;
    cache_options.node_download_concurrency = options_.node_download_concurrency;
    cache_options.digest_records = options_.digest_records;
    cache_options.store_checksums = options_.store_checksums;
    prepared.push_back({.st = std::move(st),
                        .tar_names = std::move(tar_names),
                        .cache_options = std::move(cache_options),
                        .mirror_sizes = std::move(mirror_sizes),
                        .index_version = std::move(index_version)});
  }
  std::vector<std::optional<Result<DatasetDescription>>> loaded(prepared.size());
  RunEach(prepared.size(), kIndexLoadsAtOnce, [&](size_t s) {
    PreparedStream& p = prepared[s];
    loaded[s] = LoadIndex(p.st.remote.get(), p.st.remote_prefix, p.st.local,
                          {.offline = options_.offline,
                           .tar_scan = p.cache_options,
                           .tar_names = std::move(p.tar_names),
                           .index_version = p.index_version});
  });

  FERRY_ASSIGN_OR_RETURN(const PeerOptions peers, ResolvePeers(options_.peers));
  if (!peers.addresses.empty()) {
    FERRY_ASSIGN_OR_RETURN(peer_server_, ProcessPeerServer(peers));
  }
  uint64_t first_id = 0;
  bool fits = true;  // every stream fits its cache_limit whole (or there is none)
  for (size_t s = 0; s < prepared.size(); ++s) {
    const StreamSpec& spec = options_.streams[s];
    StreamState& st = prepared[s].st;
    const std::filesystem::path& local = st.local;
    ShardCacheOptions& cache_options = prepared[s].cache_options;
    FERRY_ASSIGN_OR_RETURN(DatasetDescription index, std::move(*loaded[s]));
    for (size_t k = 0; k < index.shards.size(); ++k) {
      auto format = FindShardFormat(index.shards[k].format);
      if (!format) {
        return format.error().WithContext(fmt::format(
            "stream {} ({}): shard {}", s, spec.remote.empty() ? spec.local : spec.remote, k));
      }
      st.formats.push_back(*format);
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
    const size_t shards = index.shards.size();
    if (prepared[s].mirror_sizes) prepared[s].mirror_sizes->Fill(index);
    // One copy per process, shared with the cache: an index of 100,000 shards is some 30 MB.
    indexes_.push_back(std::make_shared<const DatasetDescription>(std::move(index)));
    std::optional<std::string> peer_id;
    if (!peers.addresses.empty() && st.remote) {
      FERRY_ASSIGN_OR_RETURN(peer_id,
                             ReadThroughPeers(st.remote, st.remote_prefix, st.local, peers));
    }
    // The other nodes ask a compressed shard's owner for its compressed form: the owner keeps
    // it beside the raw file, which is all a node keeps otherwise.
    if (peer_id && !options_.keep_zip) cache_options.keep_zip_of = OwnedByThisNode(peers);
    keep_zip_of_.push_back(cache_options.keep_zip_of);
    for (size_t k = 0; k < shards; ++k) {
      st.disk_bytes += DiskBytes(static_cast<uint32_t>(s), static_cast<uint32_t>(k));
    }
    FERRY_ASSIGN_OR_RETURN(
        st.cache, ShardCache::Open(st.remote, st.remote_prefix, indexes_.back(), cache_options));
    if (peer_id && peer_server_) {
      st.peer_registration = peer_server_->Serve(
          *peer_id, {.root = st.local,
                     .index = indexes_.back(),
                     .fetch =
                         [cache = st.cache.get()](size_t k, std::stop_token stop) {
                           return cache->Prepare(k, /*blocking=*/false, stop);
                         },
                     .keeps_compressed = KeptCompressed(cache_options)});
    }
    // The folder holds its index.json (and ferry's records) beside the shards: counted as the
    // plan counts them, the same in every process (PlannedOtherBytes), not as they are now.
    const uint64_t planned_other =
        internal_cache::PlannedOtherBytes(internal_cache::CacheLayout(st.local));
    other_bytes_ = std::max(other_bytes_, planned_other);
    if (options_.cache_limit && st.disk_bytes + planned_other > *options_.cache_limit) {
      fits = false;
    }
    streams_.push_back(std::move(st));
  }
  num_samples_ = first_id;
  std::vector<StreamCache> caches;
  for (const StreamState& st : streams_) {
    caches.push_back({.cache = st.cache.get(), .local = st.local, .remote = st.remote != nullptr});
  }
  caches_.emplace(std::move(caches));
  if (options_.cache_limit) FERRY_RETURN_IF_ERROR(caches_->CheckLimit(*options_.cache_limit));
  // The budget shares out what the limit leaves for shards.
  budget_ = internal_cache::CacheBudget(
      options_.cache_limit ? std::optional<uint64_t>(*options_.cache_limit -
                                                     std::min(*options_.cache_limit, other_bytes_))
                           : std::nullopt,
      fits);
  std::vector<uint64_t> stream_samples;
  for (const StreamState& st : streams_) {
    stream_samples.push_back(
        st.shard_starts.empty() ? 0 : st.shard_starts.back() + st.shard_samples.back());
  }
  FERRY_ASSIGN_OR_RETURN(
      ResolvedWeights weights,
      ResolveWeights(stream_samples, options_.streams, options_.epoch_size, options_.order.seed));
  weights_ = std::move(weights.streams);
  FERRY_ASSIGN_OR_RETURN(auto mix, Mix(0));
  epoch_samples_ = mix->total;
  return Status::Ok();
}

Result<std::shared_ptr<const EpochMix>> StreamingDatasetImpl::Mix(uint64_t epoch) {
  MutexLock lock(mu_);
  if (auto it = mixes_.find(epoch); it != mixes_.end()) return it->second;
  std::vector<std::vector<uint64_t>> samples;
  for (const auto& st : streams_) samples.push_back(st.shard_samples);
  std::vector<uint64_t> choose;
  for (const StreamWeight& w : weights_) choose.push_back(w.choose);
  FERRY_ASSIGN_OR_RETURN(EpochMix mix, MixStreams(samples, choose, options_.sampling_method,
                                                  options_.order.seed, epoch));
  if (mix.total == 0) return InvalidArgumentError("the streams give no samples this epoch");
  auto shared = std::make_shared<const EpochMix>(std::move(mix));
  if (mixes_.size() >= 4) mixes_.erase(mixes_.begin());  // epochs go forward; keep a few
  mixes_[epoch] = shared;
  return shared;
}

Result<std::shared_ptr<const EpochPlan>> StreamingDatasetImpl::Plan(const WorldShape& world,
                                                                    uint64_t epoch,
                                                                    uint64_t resume_from) {
  FERRY_ASSIGN_OR_RETURN(auto mix, Mix(epoch));
  FERRY_ASSIGN_OR_RETURN(const internal_order::WorkingSetFit fit, FitOrder(*mix, world));
  return EpochPlan::Create(mix->Counts(), fit.order, world, epoch, resume_from, StreamLayout(*mix));
}

std::vector<StreamShards> StreamingDatasetImpl::StreamLayout(const EpochMix& mix) const {
  if (options_.order.batching == BatchingMethod::kRandom) return {};
  std::vector<StreamShards> out(streams_.size());
  for (size_t s = 0; s < out.size(); ++s) out[s].proportion = weights_[s].proportion;
  for (const VirtualShard& vs : mix.shards) ++out[vs.stream].shards;
  return out;
}

std::function<bool(std::string_view)> StreamingDatasetImpl::KeptCompressed(
    const ShardCacheOptions& cache) {
  if (cache.keep_zip) return [](std::string_view) { return true; };
  return cache.keep_zip_of;
}

uint64_t StreamingDatasetImpl::DiskBytes(uint32_t stream, uint32_t shard) const {
  const ShardDescription& e = indexes_[stream]->shards[shard];
  if (options_.keep_zip) return e.raw_bytes() + (e.zip_data ? e.stored_bytes() : 0);
  uint64_t bytes = e.raw_bytes();
  if (const auto& keep = keep_zip_of_[stream]) {
    for (const ShardFile& file : e.files()) {
      if (file.zip != nullptr && keep(file.zip->basename)) bytes += file.zip->bytes;
    }
  }
  return bytes;
}

Result<internal_order::WorkingSetFit> StreamingDatasetImpl::FitOrder(const EpochMix& mix,
                                                                     const WorldShape& world) {
  internal_order::WorkingSetFit fit;
  fit.order = options_.order;
  if (!budget_.limited()) return fit;
  std::vector<internal_order::StreamFootprint> footprints(streams_.size());
  for (const VirtualShard& vs : mix.shards) {
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

std::string StreamingDatasetImpl::DescribeFit(
    const internal_order::WorkingSetFit& fit,
    const std::vector<internal_order::StreamFootprint>& footprints, const WorldShape& world) const {
  const OrderOptions& asked = options_.order;
  // The smallest limit that holds the order as asked: its working set in the limit's room, or
  // the largest stream that does not fit whole (then nothing is ever evicted) - beside the
  // index.json and ferry's records that the folder holds too.
  uint64_t largest_stream = 0;
  for (const StreamState& st : streams_) {
    if (st.disk_bytes > *budget_.limit()) largest_stream = std::max(largest_stream, st.disk_bytes);
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

Result<std::shared_ptr<const OpenShard>> StreamingDatasetImpl::Open(const ShardKey& key,
                                                                    ShardHandle handle) {
  if (auto shard = Cached(key)) return shard;
  StartWatch();
  const ShardDescription& entry = indexes_[key.stream]->shards[key.shard];
  const ShardFormat& format = *streams_[key.stream].formats[key.shard];
  auto opened = format.Open(handle.path(), entry);
  // Deleted since the cache looked (by someone else: it is pinned against eviction): fetched
  // again, a few times, as Mosaic retries.
  for (int retry = 0; !opened && opened.error().code() == StatusCode::kNotFound &&
                      streams_[key.stream].remote && retry < 3;
       ++retry) {
    FERRY_ASSIGN_OR_RETURN(handle, streams_[key.stream].cache->Acquire(key.shard));
    opened = format.Open(handle.path(), entry);
  }
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ShardReader> reader, std::move(opened));
  metrics::GetCounter("/ferry/stream/shard_opens").Add();
  auto shard = std::make_shared<const OpenShard>(std::move(handle), std::move(reader));
  // Under a cache_limit the recently used shards kept open are pinned, shared by every reader
  // of the cache folder: all of them together keep a quarter of it open behind them, so that
  // eviction still finds room beside what they fetch ahead (half, shared alike; the race test
  // in tests/integration/stream_test.cc). Not when every stream fits its cache whole: nothing
  // is ever evicted then, and a shuffled order would re-open a shard for nearly every sample
  // (epoch 2 at 0.3 of `cat`).
  open_shards_.Add(key, shard, entry.raw_bytes(), budget_.OpenBytesPerReader(readers_.load()));
  return shard;
}

Result<Sample> StreamingDatasetImpl::Read(const std::shared_ptr<const OpenShard>& shard,
                                          const ShardKey& key, uint64_t index) const {
  Sample sample;
  sample.stream = key.stream;
  sample.id = streams_[key.stream].first_id + streams_[key.stream].shard_starts[key.shard] + index;
  SampleFields read{std::move(sample.fields), nullptr};
  FERRY_RETURN_IF_ERROR(shard->reader->ReadSample(static_cast<uint32_t>(index), read));
  sample.fields = std::move(read.fields);
  sample.config = read.config;
  sample.file = shard->reader->mapped_file();
  sample.owner = shard;
  return sample;
}

bool StreamingDatasetImpl::RangeReadable(const ShardKey& key) const {
  const StreamState& st = streams_[key.stream];
  return options_.read_before_download && st.remote && !options_.validate_hash &&
         !indexes_[key.stream]->shards[key.shard].zip_data && st.formats[key.shard]->ReadsByRange();
}

Result<std::unique_ptr<internal_cache::DownloadProgressReader>> StreamingDatasetImpl::OpenLanding(
    const ShardKey& key) const {
  const internal_cache::CacheLayout layout(streams_[key.stream].local);
  const std::string& basename = indexes_[key.stream]->shards[key.shard].raw_data.basename;
  FERRY_ASSIGN_OR_RETURN(
      auto landing, internal_cache::DownloadProgressReader::Open(layout.ProgressPath(basename),
                                                                 layout.TemporaryPath(basename)));
  if (!landing) return std::unique_ptr<internal_cache::DownloadProgressReader>();
  return std::move(*landing);
}

Result<std::optional<Sample>> StreamingDatasetImpl::ReadLanded(
    const internal_cache::DownloadProgressReader& landing, const ShardKey& key, uint64_t index,
    std::chrono::steady_clock::time_point deadline) const {
  const ShardDescription& entry = indexes_[key.stream]->shards[key.shard];
  const RangeRead read = [&](uint64_t offset, uint64_t length) {
    return landing.Read(offset, length, deadline);
  };
  FERRY_ASSIGN_OR_RETURN(auto ranged, streams_[key.stream].formats[key.shard]->ReadByRange(
                                          read, entry, static_cast<uint32_t>(index)));
  if (!ranged) return std::nullopt;
  metrics::GetCounter("/ferry/stream/landed_reads").Add();
  return std::optional<Sample>(FromRanged(key, index, std::move(*ranged)));
}

Result<std::optional<Sample>> StreamingDatasetImpl::GetByRange(const ShardKey& key,
                                                               uint64_t index) {
  if (options_.download_on_access || !RangeReadable(key) ||
      streams_[key.stream].cache->IsLocal(key.shard)) {
    return std::nullopt;
  }
  {
    MutexLock lock(mu_);
    if (++ranged_[key].gets > kRangedGetsPerShard) return std::nullopt;  // walked: fetch it
  }
  FERRY_ASSIGN_OR_RETURN(const auto spans, Spans(key));
  if (!spans) return std::nullopt;
  FERRY_ASSIGN_OR_RETURN(Sample sample, ReadBySpans(key, *spans, index));
  return std::optional<Sample>(std::move(sample));
}

Result<std::shared_ptr<const SampleSpans>> StreamingDatasetImpl::Spans(const ShardKey& key) {
  // The offset tables kept, at most: a few bytes per sample of the shards read so.
  constexpr uint64_t kMaxSpanBytes = uint64_t{64} << 20;
  {
    MutexLock lock(mu_);
    if (auto it = ranged_.find(key); it != ranged_.end() && it->second.spans) {
      return it->second.spans;
    }
  }
  const StreamState& st = streams_[key.stream];
  const ShardDescription& entry = indexes_[key.stream]->shards[key.shard];
  const std::string key_name = st.remote_prefix + entry.raw_data.basename;
  const RangeRead read = [&](uint64_t offset, uint64_t length) {
    return st.remote->GetRange(key_name, offset, length);
  };
  auto spans = st.formats[key.shard]->ReadSpans(read, entry);
  if (!spans) return spans.status().WithContext(st.remote->ToUrl(key_name));
  if (!*spans) return spans;
  MutexLock lock(mu_);
  // Over the bound, the tables kept go (the counts stay): a table costs one request again.
  if (span_bytes_ + (*spans)->memory_bytes() > kMaxSpanBytes) {
    for (auto& [_, r] : ranged_) r.spans.reset();
    span_bytes_ = 0;
  }
  RangedShard& ranged = ranged_[key];
  if (!ranged.spans) {  // another thread may have read it meanwhile
    ranged.spans = *spans;
    span_bytes_ += (*spans)->memory_bytes();
  }
  return ranged.spans;
}

Result<Sample> StreamingDatasetImpl::ReadBySpans(const ShardKey& key, const SampleSpans& spans,
                                                 uint64_t index) const {
  const StreamState& st = streams_[key.stream];
  const std::string key_name =
      st.remote_prefix + indexes_[key.stream]->shards[key.shard].raw_data.basename;
  const auto [begin, end] = spans.Span(static_cast<uint32_t>(index));
  FERRY_ASSIGN_OR_RETURN(std::string record, st.remote->GetRange(key_name, begin, end - begin));
  if (record.size() != end - begin) {
    return DataLossError(fmt::format("{}: sample {} cut short: {} of {} bytes",
                                     st.remote->ToUrl(key_name), index, record.size(),
                                     end - begin));
  }
  RangedSample ranged;
  ranged.owner = std::make_shared<const std::string>(std::move(record));
  FERRY_RETURN_IF_ERROR(spans.Split(static_cast<uint32_t>(index), *ranged.owner, ranged.sample)
                            .WithContext(st.remote->ToUrl(key_name)));
  metrics::GetCounter("/ferry/stream/direct_reads").Add();
  return FromRanged(key, index, std::move(ranged));
}

Sample StreamingDatasetImpl::FromRanged(const ShardKey& key, uint64_t index,
                                        RangedSample ranged) const {
  const StreamState& st = streams_[key.stream];
  Sample sample;
  sample.stream = key.stream;
  sample.id = st.first_id + st.shard_starts[key.shard] + index;
  sample.fields = std::move(ranged.sample.fields);
  sample.config = ranged.sample.config;
  sample.owner = std::move(ranged.owner);
  return sample;
}

Result<Sample> StreamingDatasetImpl::Get(uint64_t id, std::stop_token stop) {
  if (id >= num_samples_) {
    return OutOfRangeError(fmt::format("sample {} is past the end ({} samples)", id, num_samples_));
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
  if (auto open = Cached(key)) return Read(open, key, in_stream - st.shard_starts[k]);
  FERRY_ASSIGN_OR_RETURN(auto ranged, GetByRange(key, in_stream - st.shard_starts[k]));
  if (ranged) return std::move(*ranged);
  FERRY_ASSIGN_OR_RETURN(ShardHandle handle, st.cache->Acquire(k, stop));
  FERRY_ASSIGN_OR_RETURN(auto shard, Open(key, std::move(handle)));
  return Read(shard, key, in_stream - st.shard_starts[k]);
}

Result<std::unique_ptr<SampleIterator>> StreamingDatasetImpl::Iterate(const IterateOptions& o) {
  reading_epoch_->store(o.epoch);
  FERRY_ASSIGN_OR_RETURN(auto mix, Mix(o.epoch));
  FERRY_ASSIGN_OR_RETURN(const internal_order::WorkingSetFit fit, FitOrder(*mix, o.world));
  FERRY_ASSIGN_OR_RETURN(auto plan, EpochPlan::Create(mix->Counts(), fit.order, o.world, o.epoch,
                                                      o.resume_from, StreamLayout(*mix)));
  FERRY_ASSIGN_OR_RETURN(WorkerCursor cursor, plan->Worker(o.worker));
  cursor.Skip(o.skip);
  return std::unique_ptr<SampleIterator>(
      new StreamIterator(shared_from_this(), std::move(plan), std::move(mix), cursor, fit.used));
}

Status StreamingDatasetImpl::PrepareShard(size_t shard, bool blocking, std::stop_token stop) {
  FERRY_ASSIGN_OR_RETURN(const ShardKey key, caches_->Locate(shard));
  return streams_[key.stream].cache->Prepare(key.shard, blocking, stop);
}

Status StreamingDatasetImpl::EvictShard(size_t shard) {
  FERRY_ASSIGN_OR_RETURN(const ShardKey key, caches_->Locate(shard));
  return EvictKey(key).status();
}

Result<size_t> StreamingDatasetImpl::EvictColdestShard() {
  return caches_->EvictColdest([this](const ShardKey& key) { return EvictKey(key); });
}

std::vector<std::filesystem::path> StreamingDatasetImpl::LimitedCacheFolders() const {
  std::vector<std::filesystem::path> folders;
  if (!budget_.limited()) return folders;
  for (const StreamState& st : streams_) {
    if (st.remote) folders.push_back(st.local);
  }
  return folders;
}

uint64_t StreamingDatasetImpl::ShardBytes(const ShardKey& key) const {
  const ShardDescription& e = indexes_[key.stream]->shards[key.shard];
  return e.stored_bytes();
}

double StreamingDatasetImpl::MeanSamplesPerShard() const {
  size_t shards = 0;
  for (const auto& index : indexes_) shards += index->shards.size();
  return shards == 0 ? 0 : static_cast<double>(num_samples_) / static_cast<double>(shards);
}

Result<uint64_t> StreamingDatasetImpl::EvictKey(const ShardKey& key) {
  auto evicted = streams_[key.stream].cache->Evict(key.shard);
  if (evicted.ok() || evicted.status().code() != StatusCode::kFailedPrecondition ||
      !streams_[key.stream].remote || !open_shards_.Find(key)) {
    return evicted;
  }
  open_shards_.Drop(key, false);
  return streams_[key.stream].cache->Evict(key.shard);
}

void StreamingDatasetImpl::StartWatch() {
  if (watching_.exchange(true)) return;
  std::unordered_map<std::string, ShardKey> files;
  for (uint32_t s = 0; s < streams_.size(); ++s) {
    if (!streams_[s].remote) continue;
    for (uint32_t k = 0; k < indexes_[s]->shards.size(); ++k) {
      files[(streams_[s].local / indexes_[s]->shards[k].raw_data.basename).string()] = {s, k};
    }
  }
  open_shards_.Watch(files);
}

}  // namespace internal_stream

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
  auto dataset = std::make_shared<internal_stream::StreamingDatasetImpl>(std::move(options));
  FERRY_RETURN_IF_ERROR(dataset->Init());
  return std::shared_ptr<StreamingDataset>(std::move(dataset));
}

}  // namespace ferry
