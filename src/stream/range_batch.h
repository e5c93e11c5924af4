// RangeBatch: the first samples of an iterator at a cold start, read by range all at once - the
// offset table of each shard they touch once, then one request per sample, on as many threads -
// so that a shuffled first batch, whose samples lie in many shards, arrives after the index and
// two round trips instead of after its shards. The iterator takes the results in order; a sample
// that could not be read so (an error, a format not read by range) is left to its shard, whose
// fetch says what is wrong.
//
// Thread-safety: Await and Take are called by the iterator's thread; the reads run on the
// batch's own threads, joined by the destructor (each is a round trip or two: nothing to stop).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "ferry/format/shard_format.h"
#include "ferry/stream/streaming_dataset.h"
#include "stream/prefetcher.h"

namespace ferry::internal_stream {

class StreamingDatasetImpl;

class RangeBatch {
 public:
  /// The most samples (and threads) one batch reads.
  static constexpr size_t kMaxSamples = 256;
  static constexpr size_t kMaxThreads = 64;

  /// Starts reading `samples` (shard and index in it, in the iterator's order; at most
  /// kMaxSamples; nullopt: one not to read so) from `dataset`; each must be RangeReadable.
  RangeBatch(std::shared_ptr<StreamingDatasetImpl> dataset,
             std::vector<std::optional<std::pair<ShardKey, uint64_t>>> samples);
  ~RangeBatch();
  RangeBatch(const RangeBatch&) = delete;
  RangeBatch& operator=(const RangeBatch&) = delete;

  size_t size() const { return samples_.size(); }

  /// Waits until the read of sample `i` has ended, up to `timeout` if given: false when the
  /// time ran out first.
  bool Await(size_t i, std::optional<std::chrono::milliseconds> timeout);

  /// Sample `i`, once Await says its read has ended; nullopt when it could not be read by range
  /// (read it from its shard). Once per sample.
  std::optional<Sample> Take(size_t i);
  /// True when Take(i) would give a sample.
  bool Has(size_t i);

 private:
  void Run();                // one of the threads: takes tasks until none is left
  void ReadSpans(size_t k);  // task: the spans of keys_[k]
  void ReadSample(size_t i);

  const std::shared_ptr<StreamingDatasetImpl> dataset_;
  const std::vector<std::optional<std::pair<ShardKey, uint64_t>>> samples_;
  std::vector<ShardKey> keys_;        // distinct shards of samples_, in order of first use
  std::vector<size_t> key_of_;        // per sample to read: its index in keys_
  std::atomic<size_t> next_task_{0};  // keys_ first, then samples_

  Mutex mu_;
  std::condition_variable_any changed_;
  std::vector<std::shared_ptr<const SampleSpans>> spans_ GUARDED_BY(mu_);
  std::vector<bool> spans_read_ GUARDED_BY(mu_);  // the read of keys_[k]'s spans ended
  std::vector<std::optional<Sample>> results_ GUARDED_BY(mu_);
  std::vector<bool> done_ GUARDED_BY(mu_);
  std::vector<std::jthread> threads_;  // last: they use the members above
};

}  // namespace ferry::internal_stream
