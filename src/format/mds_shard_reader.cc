#include "ferry/format/mds_shard_reader.h"

#include <fmt/format.h>

#include "base/little_endian.h"
#include "base/mapped_file.h"

namespace ferry {

Result<MdsShardReader> MdsShardReader::Open(const std::filesystem::path& path,
                                            const ShardDescription& entry) {
  FERRY_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  auto owner = std::make_shared<MappedFile>(std::move(file));
  const std::string_view data = owner->data();
  MappedShardFile mapped{.path = path, .inode = owner->inode(), .bytes = data};
  FERRY_ASSIGN_OR_RETURN(MdsShardReader reader,
                         Validate(std::move(owner), data, entry, path.string()));
  reader.mapped_file_ = std::move(mapped);
  return reader;
}

Result<MdsShardReader> MdsShardReader::FromBuffer(std::string data, const ShardDescription& entry,
                                                  std::string origin) {
  auto owner = std::make_shared<std::string>(std::move(data));
  const std::string_view view = *owner;
  return Validate(std::move(owner), view, entry, std::move(origin));
}

Result<MdsShardReader> MdsShardReader::Validate(std::shared_ptr<const void> owner,
                                                std::string_view data,
                                                const ShardDescription& entry, std::string origin) {
  auto bad = [&](std::string_view what) {
    return DataLossError(fmt::format("{}: {}", origin, what));
  };
  const uint64_t size = data.size();
  if (size != entry.raw_data.bytes) {
    return bad(
        fmt::format("file holds {} bytes but the index says {}", size, entry.raw_data.bytes));
  }
  if (size < 8) return bad(fmt::format("{} bytes cannot hold a shard header", size));
  const uint64_t n = LoadU32LE(data.data());
  if (n != entry.samples) {
    return bad(fmt::format("header counts {} samples but the index says {}", n, entry.samples));
  }
  const uint64_t table_end = 4 + 4 * (n + 1);
  if (table_end > size) {
    return bad(fmt::format("offset table of {} samples runs past the end of the file ({} bytes)", n,
                           size));
  }
  const char* offsets = data.data() + 4;
  const uint64_t first = LoadU32LE(offsets);
  if (first < table_end || first > size) {
    return bad(
        fmt::format("offsets[0] = {} must lie between the offset table end ({}) and the "
                    "file size ({})",
                    first, table_end, size));
  }
  const std::string_view config_text = data.substr(table_end, first - table_end);
  auto config = ParseShardConfig(config_text);
  if (!config) return bad(config.error().message());
  if (!(*config == *entry.config)) {
    return bad("the config block embedded in the shard differs from the index entry");
  }

  MdsShardReader reader;
  reader.config_ = entry.config;
  reader.columns_.reserve(entry.config->column_sizes.size());
  for (const auto& s : entry.config->column_sizes) {
    if (s) {
      reader.columns_.push_back({true, *s});
      reader.min_record_ += *s;
    } else {
      reader.columns_.push_back({false, reader.num_variable_++});
      reader.min_record_ += 4;
    }
  }

  uint64_t prev = first;
  for (uint64_t i = 1; i <= n; ++i) {
    const uint64_t next = LoadU32LE(offsets + 4 * i);
    if (next < prev) {
      return bad(
          fmt::format("offsets[{}] = {} is smaller than offsets[{}] = {}", i, next, i - 1, prev));
    }
    if (next > size) {
      return bad(
          fmt::format("offsets[{}] = {} is past the end of the file ({} bytes)", i, next, size));
    }
    if (next - prev < reader.min_record_) {
      return bad(fmt::format("sample {} is {} bytes, shorter than the {} its columns need", i - 1,
                             next - prev, reader.min_record_));
    }
    prev = next;
  }
  if (prev != size) {
    return bad(fmt::format("offsets[{}] = {} but the file has {} bytes", n, prev, size));
  }
  reader.owner_ = std::move(owner);
  reader.data_ = data;
  reader.origin_ = std::move(origin);
  reader.num_samples_ = static_cast<uint32_t>(n);
  return reader;
}

std::string_view MdsShardReader::record(uint32_t i) const {
  const char* offsets = data_.data() + 4;
  const uint32_t begin = LoadU32LE(offsets + 4 * size_t{i});
  const uint32_t end = LoadU32LE(offsets + 4 * (size_t{i} + 1));
  return data_.substr(begin, end - begin);
}

Status MdsShardReader::ReadFields(uint32_t i, std::span<std::string_view> fields) const {
  const std::string_view rec = record(i);
  const char* table = rec.data();
  uint64_t pos = 4 * uint64_t{num_variable_};  // Open guaranteed rec.size() >= min_record_
  for (size_t c = 0; c < columns_.size(); ++c) {
    const Column& col = columns_[c];
    const uint64_t len =
        col.fixed ? col.size_or_slot : LoadU32LE(table + 4 * size_t{col.size_or_slot});
    if (len > rec.size() - pos) {
      return DataLossError(
          fmt::format("{}: sample {}: column '{}' claims {} bytes but only {} "
                      "remain in its {}-byte record",
                      origin_, i, config_->column_names[c], len, rec.size() - pos, rec.size()));
    }
    fields[c] = rec.substr(pos, len);
    pos += len;
  }
  if (pos != rec.size()) {
    return DataLossError(fmt::format("{}: sample {}: record has {} bytes after its last column",
                                     origin_, i, rec.size() - pos));
  }
  return Status::Ok();
}

Status MdsShardReader::ReadSample(uint32_t i, SampleFields& out) const {
  out.config = config_.get();
  out.fields.resize(columns_.size());
  return ReadFields(i, out.fields);
}

Result<std::vector<std::string_view>> MdsShardReader::Fields(uint32_t i) const {
  std::vector<std::string_view> fields(columns_.size());
  FERRY_RETURN_IF_ERROR(ReadFields(i, fields));
  return fields;
}

Status SplitRecord(const ShardConfig& config, std::string_view record,
                   std::span<std::string_view> fields) {
  size_t variable = 0;
  for (const auto& size : config.column_sizes) variable += size ? 0 : 1;
  if (fields.size() != config.column_sizes.size() || record.size() < 4 * variable) {
    return DataLossError(fmt::format("record of {} bytes is too short for its {} size entries",
                                     record.size(), variable));
  }
  uint64_t pos = 4 * variable;
  size_t slot = 0;
  for (size_t c = 0; c < fields.size(); ++c) {
    const auto& fixed = config.column_sizes[c];
    const uint64_t len = fixed ? *fixed : LoadU32LE(record.data() + 4 * slot++);
    if (len > record.size() - pos) {
      return DataLossError(
          fmt::format("column '{}' claims {} bytes but only {} remain in its "
                      "{}-byte record",
                      config.column_names[c], len, record.size() - pos, record.size()));
    }
    fields[c] = record.substr(pos, len);
    pos += len;
  }
  if (pos != record.size()) {
    return DataLossError(
        fmt::format("record has {} bytes after its last column", record.size() - pos));
  }
  return Status::Ok();
}

}  // namespace ferry
