// StreamIterator: one worker's iterator over a StreamingDatasetImpl for one epoch. It walks the
// worker's plan cursor; its Prefetcher fetches ahead of it the shards the cursor will need; it
// reads from one open shard at a time, taken from the dataset's open shards or opened when its
// fetch is done. At a cold start, the first batch (order.batch_size samples) is read by range,
// all at once, while the shards download; after it, a sample of a shard still downloading (by this
// process or another of the node) is read from the bytes that have landed as soon as its own have,
// not after the whole shard.
//
// Thread-safety: used by one thread (the worker's). The prefetcher's threads only resolve plan
// samples to shards, over the plan and mix, which do not change.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "cache/download_progress.h"
#include "ferry/order/epoch_plan.h"
#include "ferry/result.h"
#include "ferry/stream/streaming_dataset.h"
#include "order/working_set.h"
#include "stream/open_shards.h"
#include "stream/prefetcher.h"
#include "stream/range_batch.h"
#include "stream/stream_mix.h"

namespace ferry::internal_stream {

class StreamingDatasetImpl;

class StreamIterator : public SampleIterator {
 public:
  /// Reads `cursor`'s samples of `plan` (of the epoch mixed as `mix`), fetching ahead within
  /// what the dataset's cache budget leaves beside `working_set`.
  StreamIterator(std::shared_ptr<StreamingDatasetImpl> dataset,
                 std::shared_ptr<const EpochPlan> plan, std::shared_ptr<const EpochMix> mix,
                 WorkerCursor cursor, const internal_order::WorkingSet& working_set);

  Result<std::optional<Sample>> Next() override;
  bool AwaitNext(std::chrono::milliseconds timeout) override;
  uint64_t remaining() const override { return cursor_.remaining(); }

 private:
  Result<std::optional<Sample>> NextSample(bool first);

  // Starts reading by range the batch beginning with sample `index` of `key`, at `position`.
  void StartBatch(const ShardKey& key, uint64_t index, uint64_t position);
  // The batch's sample at `position` (sample `index` of `key`), waiting for its read or for its
  // bytes to land, whichever is first; nullopt when the batch does not hold it (read it from its
  // shard).
  std::optional<Sample> TakeFromBatch(const ShardKey& key, uint64_t index, uint64_t position);

  // Sample `index` of `key` (needed at `position`) read from the bytes its download has landed,
  // waiting for them until `deadline`; nullopt when the shard has been fetched whole meanwhile
  // (open it), when it cannot be read so, or when the deadline came first.
  Result<std::optional<Sample>> ReadWhileDownloading(
      const ShardKey& key, uint64_t index, uint64_t position,
      std::chrono::steady_clock::time_point deadline);

  // The shard and in-shard index of a plan sample.
  std::pair<ShardKey, uint64_t> Resolve(uint64_t sample) const;
  // A sample of `key` is read by range when it must be read before its shard: a raw format
  // whose offsets can be read, and the shard not in the cache folder.
  bool ReadableByRangeNow(const ShardKey& key) const;

  std::shared_ptr<StreamingDatasetImpl> dataset_;
  std::shared_ptr<const EpochPlan> plan_;
  std::shared_ptr<const EpochMix> mix_;
  WorkerCursor cursor_;
  std::shared_ptr<const OpenShard> current_;
  ShardKey current_key_;
  bool first_ = true;              // no sample returned yet
  bool widened_ = false;           // the prefetcher was told the first batch was read
  std::optional<Sample> pending_;  // the next sample, read ahead by AwaitNext
  // At a cold start: the first batch's samples, read by range all at once, from position
  // batch_first_ on.
  std::unique_ptr<RangeBatch> batch_;
  uint64_t batch_first_ = 0;
  // The downloads in progress read from, by shard (a few: those the cursor is waiting on).
  std::map<ShardKey, std::unique_ptr<internal_cache::DownloadProgressReader>> landing_;
  DrainEvery drain_;                        // when to hear of deleted shards
  std::unique_ptr<Prefetcher> prefetcher_;  // last: its threads use the members above
};

}  // namespace ferry::internal_stream
