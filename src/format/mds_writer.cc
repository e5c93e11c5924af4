#include "ferry/format/mds_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "base/bounded_queue.h"
#include "base/file_util.h"
#include "base/human_size.h"
#include "base/little_endian.h"
#include "base/mutex.h"
#include "format/compression.h"
#include "format/dataset_output.h"
#include "format/hash.h"

namespace ferry {
namespace {

using internal_format::kMaxShardBytes;

// A full shard on its way to disk.
struct FlushJob {
  uint64_t ordinal;
  uint64_t samples;
  std::string raw;
};

}  // namespace

size_t DefaultFlushThreads() {
  return std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
}

Result<std::optional<uint64_t>> ResolveSizeLimit(std::string_view text) {
  FERRY_ASSIGN_OR_RETURN(uint64_t bytes, ParseHumanSize(text));
  if (bytes == 0) return std::optional<uint64_t>();
  if (bytes >= kMaxShardBytes) {
    return InvalidArgumentError(
        fmt::format("size_limit {} must be below 4 GiB (shard offsets are 32-bit)", text));
  }
  return std::optional<uint64_t>(bytes);
}

class MdsWriter::Impl {
 public:
  Impl(MdsWriterOptions options, std::shared_ptr<const ShardConfig> config,
       std::optional<Compression> compression)
      : options_(std::move(options)),
        config_(std::move(config)),
        config_text_(SerializeShardConfig(*config_)),
        compression_(std::move(compression)),
        queue_(options_.max_pending_shards) {
    for (const auto& s : config_->column_sizes) {
      if (!s) ++num_variable_;
    }
    ResetShard();
    const size_t threads = std::max<size_t>(1, options_.flush_threads);
    for (size_t i = 0; i < threads; ++i) {
      flushers_.emplace_back([this](std::stop_token stop) { FlushLoop(stop); });
    }
  }

  ~Impl() {
    queue_.Close();
    for (auto& f : flushers_) f.request_stop();
  }

  const std::vector<std::string>& column_names() const { return config_->column_names; }
  const ShardConfig& config() const { return *config_; }

  Status WriteValues(std::span<const Value> values) {
    if (finished_) return FailedPreconditionError("MdsWriter: Write after Finish");
    FERRY_RETURN_IF_ERROR(BackgroundStatus());
    if (values.size() != config_->column_names.size()) {
      return InvalidArgumentError(fmt::format("sample {} has {} values for {} columns", samples_,
                                              values.size(), config_->column_names.size()));
    }
    // The record is encoded straight into the shard body; on a rollover it moves to the next.
    const size_t start = body_.size();
    body_.append(4 * size_t{num_variable_}, '\0');
    uint32_t slot = 0;
    for (size_t c = 0; c < values.size(); ++c) {
      const size_t before = body_.size();
      Status s = EncodeValue(config_->column_encodings[c], values[c], body_);
      if (s.ok() && !config_->column_sizes[c] && body_.size() - before >= kMaxShardBytes) {
        s = InvalidArgumentError("value is 4 GiB or larger");
      }
      if (!s.ok()) {
        body_.resize(start);
        return s.WithContext(
            fmt::format("sample {}: column '{}'", samples_, config_->column_names[c]));
      }
      if (!config_->column_sizes[c]) {
        StoreU32LE(body_.data() + start + 4 * size_t{slot++},
                   static_cast<uint32_t>(body_.size() - before));
      }
    }
    const uint64_t s = body_.size() - start + 4;
    if (options_.size_limit && *options_.size_limit < shard_size_ + s) {
      std::string record = body_.substr(start);
      body_.resize(start);
      FERRY_RETURN_IF_ERROR(FlushShard());
      body_.append(record);  // keeps body_'s capacity for the next shard
    }
    if (shard_size_ + s >= kMaxShardBytes) {
      body_.resize(body_.size() - (s - 4));
      return InvalidArgumentError(fmt::format(
          "sample {} would make shard {} reach 4 GiB, which MDS offsets cannot address; set a "
          "size_limit",
          samples_, next_ordinal_));
    }
    offsets_.push_back(static_cast<uint32_t>(body_.size() - (s - 4)));
    shard_size_ += s;
    ++samples_;
    return Status::Ok();
  }

  Status EndShard() {
    if (finished_) return FailedPreconditionError("MdsWriter: FlushShard after Finish");
    FERRY_RETURN_IF_ERROR(BackgroundStatus());
    if (offsets_.empty()) return Status::Ok();
    return FlushShard();
  }

  Status Write(const std::map<std::string, Value, std::less<>>& sample) {
    std::vector<Value> values;
    values.reserve(config_->column_names.size());
    for (const auto& name : config_->column_names) {
      auto it = sample.find(name);
      if (it == sample.end()) {
        return InvalidArgumentError(
            fmt::format("sample {} has no value for column '{}'", samples_, name));
      }
      values.push_back(it->second);
    }
    return WriteValues(values);
  }

  Result<DatasetDescription> Finish() {
    if (finished_) return FailedPreconditionError("MdsWriter: Finish called twice");
    finished_ = true;
    if (!offsets_.empty()) FERRY_RETURN_IF_ERROR(FlushShard());
    queue_.Close();
    // Join without requesting a stop (a jthread's destructor would, and the flushers would then
    // drop the shards still queued): they drain the closed queue and return.
    for (auto& f : flushers_) f.join();
    flushers_.clear();
    FERRY_RETURN_IF_ERROR(BackgroundStatus());
    DatasetDescription index;
    {
      MutexLock lock(mu_);
      std::sort(done_.begin(), done_.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& [ordinal, entry] : done_) index.shards.push_back(std::move(entry));
    }
    FERRY_RETURN_IF_ERROR(WriteFileAtomically(options_.out / "index.json", SerializeIndex(index)));
    return index;
  }

  uint64_t samples_written() const { return samples_; }
  uint64_t raw_bytes_written() const { return raw_bytes_; }

 private:
  void ResetShard() {
    body_.clear();
    offsets_.clear();
    shard_size_ = 8 + config_text_.size();
  }

  // Assembles the raw shard (header, offsets, config, records) and queues it for writing.
  Status FlushShard() {
    const uint64_t n = offsets_.size();
    const uint64_t header = 4 + 4 * (n + 1) + config_text_.size();
    std::string raw = TakeBuffer();
    raw.resize(header + body_.size());
    char* p = raw.data();
    StoreU32LE(p, static_cast<uint32_t>(n));
    for (uint64_t i = 0; i < n; ++i) {
      StoreU32LE(p + 4 + 4 * i, static_cast<uint32_t>(header + offsets_[i]));
    }
    StoreU32LE(p + 4 + 4 * n, static_cast<uint32_t>(header + body_.size()));
    std::memcpy(p + 4 + 4 * (n + 1), config_text_.data(), config_text_.size());
    if (!body_.empty()) std::memcpy(p + header, body_.data(), body_.size());
    raw_bytes_ += raw.size();
    if (!queue_.Push(FlushJob{next_ordinal_++, n, std::move(raw)})) {
      return BackgroundStatus().ok() ? InternalError("MdsWriter: flush queue closed")
                                     : BackgroundStatus();
    }
    ResetShard();
    return Status::Ok();
  }

  void FlushLoop(std::stop_token stop) {
    while (auto job = queue_.Pop(stop)) {
      if (!BackgroundStatus().ok()) continue;  // first error wins; drain the rest
      auto entry = WriteShard(*job);
      MutexLock lock(mu_);
      if (spare_.size() < options_.max_pending_shards + options_.flush_threads) {
        job->raw.clear();
        spare_.push_back(std::move(job->raw));
      }
      if (!entry) {
        background_status_ = entry.error();
      } else {
        done_.emplace_back(job->ordinal, std::move(*entry));
      }
    }
  }

  Result<FileInfo> WriteFile(std::string basename, std::string_view data) const {
    FileInfo info{std::move(basename), data.size(), {}};
    for (const auto& algo : config_->hashes) {
      FERRY_ASSIGN_OR_RETURN(std::string digest, HashHex(algo, data));
      info.hashes.emplace_back(algo, std::move(digest));
    }
    FERRY_RETURN_IF_ERROR(WriteFileAtomically(options_.out / info.basename, data));
    if (options_.on_shard_written) options_.on_shard_written(info.basename);
    return info;
  }

  Result<ShardDescription> WriteShard(const FlushJob& job) const {
    ShardDescription entry;
    entry.config = config_;
    entry.samples = job.samples;
    const std::string raw_name = RawShardBasename(job.ordinal);
    if (!compression_) {
      FERRY_ASSIGN_OR_RETURN(entry.raw_data, WriteFile(raw_name, job.raw));
      return entry;
    }
    // Only the compressed file is written; the raw file is still described (name, size, hashes).
    entry.raw_data = FileInfo{raw_name, job.raw.size(), {}};
    for (const auto& algo : config_->hashes) {
      FERRY_ASSIGN_OR_RETURN(std::string digest, HashHex(algo, job.raw));
      entry.raw_data.hashes.emplace_back(algo, std::move(digest));
    }
    // One output buffer per flush thread, reused shard after shard.
    thread_local std::string zipped;
    FERRY_RETURN_IF_ERROR(compression_->CompressInto(job.raw, zipped));
    FERRY_ASSIGN_OR_RETURN(
        entry.zip_data,
        WriteFile(fmt::format("{}.{}", raw_name, compression_->extension()), zipped));
    return entry;
  }

  // Shard-sized buffers cycle between the caller and the flush threads, so that each shard does
  // not fault in (and zero) tens of megabytes of fresh pages.
  std::string TakeBuffer() {
    MutexLock lock(mu_);
    if (spare_.empty()) return {};
    std::string buffer = std::move(spare_.back());
    spare_.pop_back();
    return buffer;
  }

  Status BackgroundStatus() const {
    MutexLock lock(mu_);
    return background_status_;
  }

  const MdsWriterOptions options_;
  const std::shared_ptr<const ShardConfig> config_;
  const std::string config_text_;
  const std::optional<Compression> compression_;
  uint32_t num_variable_ = 0;

  // Caller-thread state.
  std::string body_;               // the records of the shard being built
  std::vector<uint32_t> offsets_;  // record starts within body_
  uint64_t shard_size_ = 0;        // the exact raw size of the shard being built
  uint64_t next_ordinal_ = 0;
  uint64_t samples_ = 0;
  uint64_t raw_bytes_ = 0;
  bool finished_ = false;

  BoundedQueue<FlushJob> queue_;
  mutable Mutex mu_;
  Status background_status_ GUARDED_BY(mu_);
  std::vector<std::pair<uint64_t, ShardDescription>> done_ GUARDED_BY(mu_);
  std::vector<std::string> spare_ GUARDED_BY(mu_);
  // Last: started after everything they use, joined (destroyed) first.
  std::vector<std::jthread> flushers_;
};

Result<std::unique_ptr<MdsWriter>> MdsWriter::Create(MdsWriterOptions options) {
  if (options.out.empty()) return InvalidArgumentError("MdsWriter: no output folder given");
  auto config = std::make_shared<ShardConfig>();
  auto columns = options.columns;
  std::sort(columns.begin(), columns.end());  // std::string order is code point order for UTF-8
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0 && columns[i].first == columns[i - 1].first) {
      return InvalidArgumentError(fmt::format("column '{}' is given twice", columns[i].first));
    }
    auto encoding = ColumnEncoding::Parse(columns[i].second);
    if (!encoding)
      return encoding.error().WithContext(fmt::format("column '{}'", columns[i].first));
    config->column_names.push_back(columns[i].first);
    config->column_sizes.push_back(encoding->fixed_size());
    config->column_encodings.push_back(std::move(*encoding));
  }
  FERRY_ASSIGN_OR_RETURN(
      std::optional<Compression> compression,
      internal_format::PrepareWriter(options.compression, options.hashes, options.size_limit,
                                     *config, options.out, options.exist_ok));
  return std::unique_ptr<MdsWriter>(new MdsWriter(
      std::make_unique<Impl>(std::move(options), std::move(config), std::move(compression))));
}

MdsWriter::MdsWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MdsWriter::~MdsWriter() = default;
const std::vector<std::string>& MdsWriter::column_names() const { return impl_->column_names(); }
const ShardConfig& MdsWriter::config() const { return impl_->config(); }
Status MdsWriter::FlushShard() { return impl_->EndShard(); }
Status MdsWriter::WriteValues(std::span<const Value> values) { return impl_->WriteValues(values); }
Status MdsWriter::Write(const std::map<std::string, Value, std::less<>>& sample) {
  return impl_->Write(sample);
}
Result<DatasetDescription> MdsWriter::Finish() { return impl_->Finish(); }
uint64_t MdsWriter::samples_written() const { return impl_->samples_written(); }
uint64_t MdsWriter::raw_bytes_written() const { return impl_->raw_bytes_written(); }

}  // namespace ferry
