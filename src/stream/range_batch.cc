#include "stream/range_batch.h"

#include <algorithm>
#include <map>
#include <system_error>

#include "base/log.h"
#include "stream/streaming_dataset_impl.h"

namespace ferry::internal_stream {

RangeBatch::RangeBatch(std::shared_ptr<StreamingDatasetImpl> dataset,
                       std::vector<std::optional<std::pair<ShardKey, uint64_t>>> samples)
    : dataset_(std::move(dataset)), samples_(std::move(samples)) {
  std::map<ShardKey, size_t> seen;
  for (const auto& sample : samples_) {
    if (!sample) {
      key_of_.push_back(0);
      continue;
    }
    auto [it, added] = seen.emplace(sample->first, keys_.size());
    if (added) keys_.push_back(sample->first);
    key_of_.push_back(it->second);
  }
  {
    MutexLock lock(mu_);
    spans_.resize(keys_.size());
    spans_read_.assign(keys_.size(), false);
    results_.resize(samples_.size());
    done_.assign(samples_.size(), false);
    for (size_t i = 0; i < samples_.size(); ++i) done_[i] = !samples_[i];
  }
  const size_t threads = std::min({kMaxThreads, samples_.size() + keys_.size(), kMaxSamples});
  try {
    for (size_t t = 0; t < threads; ++t) threads_.emplace_back([this] { Run(); });
  } catch (const std::system_error& e) {
    // Fewer threads read the same tasks; with none, the iterator's own thread reads them.
    Log().debug("range batch: {} threads of {}: {}", threads_.size(), threads, e.what());
    if (threads_.empty()) Run();
  }
}

RangeBatch::~RangeBatch() = default;  // joins

void RangeBatch::Run() {
  // Tasks are taken in order, every spans task before any sample task: a sample waiting for
  // its shard's spans waits for a read another thread is already doing.
  for (;;) {
    const size_t task = next_task_.fetch_add(1);
    if (task < keys_.size()) {
      ReadSpans(task);
    } else if (task < keys_.size() + samples_.size()) {
      ReadSample(task - keys_.size());
    } else {
      return;
    }
  }
}

void RangeBatch::ReadSpans(size_t k) {
  auto spans = dataset_->Spans(keys_[k]);
  if (!spans) Log().debug("reading by range: {}", spans.status().ToString());
  MutexLock lock(mu_);
  if (spans) spans_[k] = std::move(*spans);
  spans_read_[k] = true;
  changed_.notify_all();
}

void RangeBatch::ReadSample(size_t i) {
  if (!samples_[i]) return;
  const auto& [key, index] = *samples_[i];
  const size_t k = key_of_[i];
  std::shared_ptr<const SampleSpans> spans;
  {
    MutexLock lock(mu_);
    changed_.wait(lock, [&]() REQUIRES(mu_) { return bool(spans_read_[k]); });
    spans = spans_[k];
  }
  std::optional<Sample> sample;
  if (spans) {
    auto read = dataset_->ReadBySpans(key, *spans, index);
    if (read) {
      sample = std::move(*read);
    } else {
      Log().debug("reading by range: {}", read.status().ToString());
    }
  }
  MutexLock lock(mu_);
  results_[i] = std::move(sample);
  done_[i] = true;
  changed_.notify_all();
}

bool RangeBatch::Await(size_t i, std::optional<std::chrono::milliseconds> timeout) {
  MutexLock lock(mu_);
  auto done = [&]() REQUIRES(mu_) { return bool(done_[i]); };
  if (!timeout) {
    changed_.wait(lock, done);
    return true;
  }
  return changed_.wait_for(lock, *timeout, done);
}

bool RangeBatch::Has(size_t i) {
  MutexLock lock(mu_);
  return results_[i].has_value();
}

std::optional<Sample> RangeBatch::Take(size_t i) {
  MutexLock lock(mu_);
  return std::exchange(results_[i], std::nullopt);
}

}  // namespace ferry::internal_stream
