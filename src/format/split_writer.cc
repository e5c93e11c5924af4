#include "ferry/format/split_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/little_endian.h"
#include "base/python_float.h"
#include "base/python_json.h"
#include "base/utf8.h"
#include "ferry/format/index.h"
#include "format/compression.h"
#include "format/dataset_output.h"
#include "format/hash.h"
#include "format/split_shard.h"

namespace ferry {
namespace {

using internal_format::kMaxShardBytes;

}  // namespace

class SplitWriter::Impl {
 public:
  Impl(SplitWriterOptions options, std::shared_ptr<const ShardConfig> config,
       std::optional<Compression> compression)
      : options_(std::move(options)),
        config_(std::move(config)),
        compression_(std::move(compression)),
        separator_(options_.format == "csv" ? ',' : '\t') {
    StartShard();
  }

  const ShardConfig& config() const { return *config_; }

  std::string ConfigJson() const {
    return DumpPythonJson(internal_format::SplitConfigJson(options_.format, *config_),
                          JsonKeyOrder::kSorted);
  }

  Status WriteValues(std::span<const Value> values) {
    if (finished_) return FailedPreconditionError("SplitWriter: write after Finish");
    const ShardConfig& c = *config_;
    if (values.size() != c.column_names.size()) {
      return InvalidArgumentError(
          fmt::format("{} values for {} columns", values.size(), c.column_names.size()));
    }
    sample_.clear();
    if (options_.format == "json") sample_ += '{';
    for (size_t i = 0; i < values.size(); ++i) {
      if (options_.format == "json") {
        if (i > 0) sample_ += ", ";
        AppendPythonJsonString(sample_, c.column_names[i]);
        sample_ += ": ";
      } else if (i > 0) {
        sample_ += separator_;
      }
      FERRY_RETURN_IF_ERROR(AppendValue(i, values[i]));
    }
    if (options_.format == "json") sample_ += '}';
    sample_ += c.newline;
    // The reference's rule: flush first when this sample would take the shard past the limit,
    // even a shard that holds no sample yet.
    if (c.size_limit && *c.size_limit < shard_bytes_ + sample_.size()) {
      FERRY_RETURN_IF_ERROR(WriteShard());
    }
    if (data_.size() + sample_.size() >= kMaxShardBytes) {
      return InvalidArgumentError(fmt::format(
          "a shard would reach 4 GiB (its offsets are 32-bit): set a size_limit below that"));
    }
    data_ += sample_;
    offsets_.push_back(static_cast<uint32_t>(data_.size()));
    shard_bytes_ += sample_.size();
    ++samples_written_;
    return Status::Ok();
  }

  Status FlushShard() {
    if (finished_) return FailedPreconditionError("SplitWriter: flush_shard after Finish");
    if (offsets_.size() == 1) return Status::Ok();
    return WriteShard();
  }

  Result<DatasetDescription> Finish() {
    if (finished_) return FailedPreconditionError("SplitWriter: Finish called twice");
    finished_ = true;
    if (offsets_.size() > 1) FERRY_RETURN_IF_ERROR(WriteShard());
    DatasetDescription index{.shards = shards_};
    FERRY_RETURN_IF_ERROR(WriteFileAtomically(options_.out / "index.json", SerializeIndex(index)));
    return index;
  }

  uint64_t samples_written() const { return samples_written_; }

 private:
  void StartShard() {
    data_.clear();
    offsets_.clear();
    shard_bytes_ = 0;
    if (options_.format != "json") {
      for (size_t i = 0; i < config_->column_names.size(); ++i) {
        if (i > 0) data_ += separator_;
        data_ += config_->column_names[i];
      }
      data_ += config_->newline;
    }
    offsets_.push_back(static_cast<uint32_t>(data_.size()));
  }

  Status AppendValue(size_t i, const Value& value) {
    const std::string& column = config_->column_names[i];
    const std::string& encoding = config_->split_encodings[i];
    const bool json = options_.format == "json";
    if (encoding == "str") {
      const auto* s = std::get_if<std::string>(&value);
      if (s == nullptr) {
        return InvalidArgumentError(fmt::format("column '{}' is str: give a str", column));
      }
      if (!IsValidUtf8(*s)) {
        return InvalidArgumentError(fmt::format("column '{}': the str is not valid UTF-8", column));
      }
      if (json) {
        AppendPythonJsonString(sample_, *s);
        return Status::Ok();
      }
      if (s->find(separator_) != std::string::npos ||
          s->find(config_->newline) != std::string::npos) {
        return InvalidArgumentError(
            fmt::format("column '{}': a {} value may not hold the separator {} or the newline {}",
                        column, options_.format, nlohmann::json(std::string(1, separator_)).dump(),
                        nlohmann::json(config_->newline).dump()));
      }
      sample_ += *s;
      return Status::Ok();
    }
    if (encoding == "int") {
      if (const auto* v = std::get_if<int64_t>(&value)) {
        sample_ += std::to_string(*v);
      } else if (const auto* u = std::get_if<uint64_t>(&value)) {
        sample_ += std::to_string(*u);
      } else {
        return InvalidArgumentError(fmt::format("column '{}' is int: give an int", column));
      }
      return Status::Ok();
    }
    const auto* d = std::get_if<double>(&value);
    if (d == nullptr) {
      return InvalidArgumentError(fmt::format("column '{}' is float: give a float", column));
    }
    if (json) {
      AppendPythonJsonFloat(sample_, *d);
    } else {
      AppendPythonFloat(sample_, *d);
    }
    return Status::Ok();
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

  // The raw file described, and the compressed one written in its place when there is one.
  Status WriteForms(const std::string& raw_name, std::string_view raw, FileInfo& raw_info,
                    std::optional<FileInfo>& zip_info) const {
    if (!compression_) {
      FERRY_ASSIGN_OR_RETURN(raw_info, WriteFile(raw_name, raw));
      return Status::Ok();
    }
    raw_info = FileInfo{raw_name, raw.size(), {}};
    for (const auto& algo : config_->hashes) {
      FERRY_ASSIGN_OR_RETURN(std::string digest, HashHex(algo, raw));
      raw_info.hashes.emplace_back(algo, std::move(digest));
    }
    FERRY_ASSIGN_OR_RETURN(const std::string zipped, compression_->Compress(raw));
    FERRY_ASSIGN_OR_RETURN(
        zip_info, WriteFile(fmt::format("{}.{}", raw_name, compression_->extension()), zipped));
    return Status::Ok();
  }

  Status WriteShard() {
    const uint64_t n = offsets_.size() - 1;
    std::string meta;
    AppendLE<uint32_t>(meta, static_cast<uint32_t>(n));
    for (uint32_t offset : offsets_) AppendLE<uint32_t>(meta, offset);
    meta += ConfigJson();
    ShardDescription shard;
    shard.format = options_.format;
    shard.config = config_;
    shard.samples = n;
    const std::string raw_name = fmt::format("shard.{:05}.{}", shards_.size(), options_.format);
    CompanionFile companion;
    FERRY_RETURN_IF_ERROR(WriteForms(raw_name, data_, shard.raw_data, shard.zip_data));
    FERRY_RETURN_IF_ERROR(WriteForms(raw_name + ".meta", meta, companion.raw, companion.zip));
    shard.companions.push_back(std::move(companion));
    shards_.push_back(std::move(shard));
    StartShard();
    return Status::Ok();
  }

  const SplitWriterOptions options_;
  const std::shared_ptr<const ShardConfig> config_;
  const std::optional<Compression> compression_;
  const char separator_;
  std::string data_;               // the shard being built: header (CSV, TSV) and samples
  std::vector<uint32_t> offsets_;  // where each sample starts, and one past the last
  uint64_t shard_bytes_ = 0;       // its samples' bytes, which size_limit counts
  std::string sample_;             // the sample being encoded
  std::vector<ShardDescription> shards_;
  uint64_t samples_written_ = 0;
  bool finished_ = false;
};

Result<std::unique_ptr<SplitWriter>> SplitWriter::Create(SplitWriterOptions options) {
  if (options.format != "json" && options.format != "csv" && options.format != "tsv") {
    return InvalidArgumentError(fmt::format("format '{}' is not json, csv or tsv", options.format));
  }
  if (options.columns.empty()) return InvalidArgumentError("a dataset needs at least one column");
  if (options.newline.empty()) return InvalidArgumentError("the newline may not be empty");
  auto config = std::make_shared<ShardConfig>();
  config->newline = options.newline;
  auto columns = options.columns;
  std::sort(columns.begin(), columns.end());
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& [name, encoding] = columns[i];
    if (i > 0 && name == columns[i - 1].first) {
      return InvalidArgumentError(fmt::format("column '{}' is given twice", name));
    }
    if (options.format != "json" &&
        (name.find(options.format == "csv" ? ',' : '\t') != std::string::npos ||
         name.find(options.newline) != std::string::npos || name.empty())) {
      return InvalidArgumentError(fmt::format(
          "column '{}': a {} column name may not be empty or hold the separator or the newline",
          name, options.format));
    }
    auto field = internal_format::SplitFieldEncoding(options.format, encoding);
    if (!field) return field.error().WithContext(fmt::format("column '{}'", name));
    config->column_names.push_back(name);
    config->split_encodings.push_back(encoding);
    config->column_encodings.push_back(std::move(*field));
    config->column_sizes.emplace_back();
  }
  FERRY_ASSIGN_OR_RETURN(
      std::optional<Compression> compression,
      internal_format::PrepareWriter(options.compression, options.hashes, options.size_limit,
                                     *config, options.out, options.exist_ok));
  return std::unique_ptr<SplitWriter>(new SplitWriter(
      std::make_unique<Impl>(std::move(options), std::move(config), std::move(compression))));
}

SplitWriter::SplitWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SplitWriter::~SplitWriter() = default;
const std::vector<std::string>& SplitWriter::column_names() const {
  return impl_->config().column_names;
}
const std::vector<std::string>& SplitWriter::column_encodings() const {
  return impl_->config().split_encodings;
}
std::string SplitWriter::config_json() const { return impl_->ConfigJson(); }
Status SplitWriter::WriteValues(std::span<const Value> values) {
  return impl_->WriteValues(values);
}
Status SplitWriter::FlushShard() { return impl_->FlushShard(); }
Result<DatasetDescription> SplitWriter::Finish() { return impl_->Finish(); }
uint64_t SplitWriter::samples_written() const { return impl_->samples_written(); }

}  // namespace ferry
