#include "stream/stream_iterator.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/log.h"
#include "cache/cache_budget.h"
#include "cache/reader_registry.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/metrics/metrics.h"
#include "stream/streaming_dataset_impl.h"

namespace ferry::internal_stream {

StreamIterator::StreamIterator(std::shared_ptr<StreamingDatasetImpl> dataset,
                               std::shared_ptr<const EpochPlan> plan,
                               std::shared_ptr<const EpochMix> mix, WorkerCursor cursor,
                               const internal_order::WorkingSet& working_set)
    : dataset_(std::move(dataset)), plan_(std::move(plan)), mix_(std::move(mix)), cursor_(cursor) {
  std::vector<ShardCache*> caches;
  for (uint32_t s = 0; s < dataset_->num_streams(); ++s) caches.push_back(dataset_->cache(s));
  PrefetchOptions prefetch;
  prefetch.predownload = dataset_->options().predownload;
  prefetch.concurrency = dataset_->options().download_concurrency;
  prefetch.max_bytes_in_flight = dataset_->options().max_bytes_in_flight;
  prefetch.cache_limited = dataset_->options().cache_limit.has_value();
  prefetch.samples_per_shard = dataset_->MeanSamplesPerShard();
  prefetch.node_download_concurrency =
      dataset_->options().node_download_concurrency.value_or(UINT32_MAX);
  // NextSample reads the first batch by range when its first sample's shard is not local.
  if (const auto v = cursor_.Peek(0)) {
    const ShardKey first = Resolve(*v).first;
    prefetch.cold_batch = ReadableByRangeNow(first);
  }
  // What is fetched ahead is pinned: it gets what the cache budget leaves beside the order's
  // working set and the open shards, shared by all the readers of a folder (the node's
  // workers).
  const internal_cache::CacheBudget& budget = dataset_->budget();
  const uint64_t live = working_set.Largest();
  prefetch.max_bytes_in_flight =
      std::min(prefetch.max_bytes_in_flight, budget.AheadBytesPerReader(1, live));
  if (budget.limited()) {
    // Registered while the prefetcher (which owns the budget) lives.
    auto readers = std::make_shared<internal_cache::FolderReaders>(dataset_->LimitedCacheFolders());
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

Result<std::optional<Sample>> StreamIterator::Next() {
  const bool first = std::exchange(first_, false);
  auto sample = NextSample(first);
  if (sample && *sample) metrics::GetCounter("/ferry/stream/samples").Add();
  // However the first batch came (by range, from local shards) or failed - or the first sample,
  // where no batch was read by range: a cold start may now fetch at full width.
  if (!widened_ && (!batch_ || !sample.ok() || cursor_.taken() - batch_first_ >= batch_->size())) {
    widened_ = true;
    prefetcher_->FirstBatchRead();
  }
  return sample;
}

bool StreamIterator::AwaitNext(std::chrono::milliseconds timeout) {
  // The first sample of a cold start is read by range: a round trip or two, not a shard.
  if (first_ || pending_) return true;
  const auto v = cursor_.Peek(0);
  if (!v) return true;
  const auto [key, index] = Resolve(*v);
  if ((current_ && current_key_ == key) || dataset_->Cached(key)) return true;
  const uint64_t position = cursor_.taken();  // Next's
  if (batch_ && position - batch_first_ < batch_->size()) {
    if (!batch_->Await(position - batch_first_, timeout)) return false;
    if (batch_->Has(position - batch_first_)) return true;
  }
  if (dataset_->RangeReadable(key) && !prefetcher_->AwaitFetched(key, position, {})) {
    auto landed =
        ReadWhileDownloading(key, index, position, std::chrono::steady_clock::now() + timeout);
    // An error is Next's to meet (it waits for the shard, and says what that ends with).
    if (!landed) return true;
    if (*landed) {
      pending_ = std::move(*landed);
      return true;
    }
    return prefetcher_->AwaitFetched(key, position, {});
  }
  return prefetcher_->AwaitFetched(key, position, timeout);
}

Result<std::optional<Sample>> StreamIterator::ReadWhileDownloading(
    const ShardKey& key, uint64_t index, uint64_t position,
    std::chrono::steady_clock::time_point deadline) {
  // Between looks at the record, waits this long for it to appear (a fetch queued, or waiting
  // for another process's download lock) and for the bytes to land.
  constexpr auto kLook = std::chrono::milliseconds(5);
  constexpr auto kWait = std::chrono::milliseconds(50);
  while (!prefetcher_->AwaitFetched(key, position, {})) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::optional<Sample>();
    auto it = landing_.find(key);
    if (it == landing_.end()) {
      auto landing = dataset_->OpenLanding(key);
      if (!landing) {  // the shard, fetched whole, is read instead
        Log().debug("reading a downloading shard: {}", landing.status().ToString());
        return std::optional<Sample>();
      }
      if (!*landing) {
        prefetcher_->AwaitFetched(key, position, kLook);
        continue;
      }
      // A few are enough: the cursor waits on one shard at a time.
      if (landing_.size() >= 16) landing_.erase(landing_.begin());
      it = landing_.emplace(key, std::move(*landing)).first;
    }
    auto sample = dataset_->ReadLanded(*it->second, key, index, std::min(deadline, now + kWait));
    metrics::GetCounter("/ferry/stream/wait_ns")
        .Add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now() - now)
                                       .count()));
    if (sample) return sample;
    if (sample.status().code() == StatusCode::kDeadlineExceeded) continue;
    // Its download ended (failed, or its process is gone; the next one writes a new record), or
    // what landed does not read: the whole shard, fetched and checked, says what is wrong.
    Log().debug("reading a downloading shard: {}", sample.status().ToString());
    landing_.erase(it);
    if (sample.status().code() != StatusCode::kUnavailable) return std::optional<Sample>();
  }
  landing_.erase(key);
  return std::optional<Sample>();
}

Result<std::optional<Sample>> StreamIterator::NextSample(bool first) {
  const auto v = cursor_.Next();
  if (!v) return std::optional<Sample>();
  prefetcher_->Advance(cursor_.taken() - 1);  // the position of the sample being read
  const auto [key, index] = Resolve(*v);
  if (pending_) return std::optional<Sample>(*std::exchange(pending_, std::nullopt));
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
  const uint64_t position = cursor_.taken() - 1;
  if (batch_ && position - batch_first_ >= batch_->size()) batch_.reset();  // passed it
  if (!current_ || current_key_ != key) {
    if (first && !prefetcher_->Warm() && !prefetcher_->Ready(key) && ReadableByRangeNow(key)) {
      // Cold start, nothing local yet: read the first batch by range rather than wait for its
      // shards, while the shard of its first sample is fetched. Only the first batch: by range
      // a sample costs a request, and batch after batch that is slower than the shards.
      prefetcher_->Request(key);
      StartBatch(key, index, position);
    }
    if (auto sample = TakeFromBatch(key, index, position)) return sample;
    if (dataset_->RangeReadable(key)) {
      FERRY_ASSIGN_OR_RETURN(
          auto landed,
          ReadWhileDownloading(key, index, position, std::chrono::steady_clock::time_point::max()));
      if (landed) return landed;
    }
    FERRY_ASSIGN_OR_RETURN(ShardHandle handle, prefetcher_->Wait(key));
    FERRY_ASSIGN_OR_RETURN(current_, dataset_->Open(key, std::move(handle)));
    current_key_ = key;
  }
  FERRY_ASSIGN_OR_RETURN(Sample sample, dataset_->Read(current_, key, index));
  return std::optional<Sample>(std::move(sample));
}

void StreamIterator::StartBatch(const ShardKey& key, uint64_t index, uint64_t position) {
  const size_t size =
      std::clamp<uint64_t>(dataset_->options().order.batch_size, 1, RangeBatch::kMaxSamples);
  std::vector<std::optional<std::pair<ShardKey, uint64_t>>> samples = {{{key, index}}};
  for (uint64_t ahead = 0; samples.size() < size; ++ahead) {
    const auto v = cursor_.Peek(ahead);
    if (!v) break;
    const auto sample = Resolve(*v);
    samples.push_back(ReadableByRangeNow(sample.first) ? std::optional(sample) : std::nullopt);
  }
  batch_first_ = position;
  batch_ = std::make_unique<RangeBatch>(dataset_, std::move(samples));
}

std::optional<Sample> StreamIterator::TakeFromBatch(const ShardKey& key, uint64_t index,
                                                    uint64_t position) {
  if (!batch_ || position - batch_first_ >= batch_->size()) return std::nullopt;
  const size_t i = position - batch_first_;
  // Whichever comes first: its ranged read, or its bytes landing in its shard's download - a
  // shard read in order lands its first samples a round trip after its download starts, one
  // sooner than an offset table and a record.
  while (!batch_->Await(i, std::chrono::milliseconds(2))) {
    if (!dataset_->RangeReadable(key)) continue;
    auto landed = ReadWhileDownloading(
        key, index, position, std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
    if (landed && *landed) return std::move(*landed);
  }
  return batch_->Take(i);
}

bool StreamIterator::ReadableByRangeNow(const ShardKey& key) const {
  return dataset_->RangeReadable(key) && !dataset_->cache(key.stream)->IsLocal(key.shard);
}

std::pair<ShardKey, uint64_t> StreamIterator::Resolve(uint64_t sample) const {
  const auto [v, offset] = plan_->Locate(sample);
  const VirtualShard& vs = mix_->shards[v];
  return {ShardKey{vs.stream, vs.shard}, vs.SampleInShard(offset)};
}

}  // namespace ferry::internal_stream
