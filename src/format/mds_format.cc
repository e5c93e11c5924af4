#include "format/mds_format.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "base/little_endian.h"
#include "ferry/format/mds_shard_reader.h"

namespace ferry::internal_format {
namespace {

// The offset table of an MDS shard: sample i is bytes [offsets[i], offsets[i + 1]).
class MdsSpans final : public SampleSpans {
 public:
  MdsSpans(std::vector<uint32_t> offsets, std::shared_ptr<const ShardConfig> config)
      : offsets_(std::move(offsets)), config_(std::move(config)) {}
  uint32_t samples() const override { return static_cast<uint32_t>(offsets_.size() - 1); }
  std::pair<uint64_t, uint64_t> Span(uint32_t i) const override {
    return {offsets_[i], offsets_[i + 1]};
  }
  Status Split(uint32_t i, std::string_view record, SampleFields& out) const override {
    out.config = config_.get();
    out.fields.resize(config_->column_names.size());
    return SplitRecord(*config_, record, out.fields).WithContext(fmt::format("sample {}", i));
  }
  uint64_t memory_bytes() const override { return offsets_.size() * sizeof(uint32_t); }

 private:
  std::vector<uint32_t> offsets_;
  std::shared_ptr<const ShardConfig> config_;
};

}  // namespace

Result<std::unique_ptr<ShardReader>> MdsFormat::Open(const std::filesystem::path& path,
                                                     const ShardDescription& shard) const {
  FERRY_ASSIGN_OR_RETURN(MdsShardReader reader, MdsShardReader::Open(path, shard));
  return std::unique_ptr<ShardReader>(new MdsShardReader(std::move(reader)));
}

Result<std::unique_ptr<ShardReader>> MdsFormat::FromBuffer(std::string data,
                                                           const ShardDescription& shard,
                                                           std::string origin) const {
  FERRY_ASSIGN_OR_RETURN(MdsShardReader reader,
                         MdsShardReader::FromBuffer(std::move(data), shard, std::move(origin)));
  return std::unique_ptr<ShardReader>(new MdsShardReader(std::move(reader)));
}

Result<std::optional<RangedSample>> MdsFormat::ReadByRange(const RangeRead& read,
                                                           const ShardDescription& shard,
                                                           uint32_t i) const {
  if (i >= shard.samples) {
    return OutOfRangeError(fmt::format("sample {} of {}", i, shard.samples));
  }
  // offsets[i] and offsets[i + 1]: where the record starts and ends.
  FERRY_ASSIGN_OR_RETURN(std::string bounds, read(4 + 4 * uint64_t{i}, 8));
  if (bounds.size() != 8) {
    return DataLossError(fmt::format("offsets of sample {} are cut short", i));
  }
  const uint64_t begin = LoadU32LE(bounds.data());
  const uint64_t end = LoadU32LE(bounds.data() + 4);
  const uint64_t table_end = 4 + 4 * (shard.samples + 1);
  if (begin < table_end || end < begin || end > shard.raw_data.bytes) {
    return DataLossError(
        fmt::format("sample {} spans [{}, {}) which is not inside the shard ({} bytes)", i, begin,
                    end, shard.raw_data.bytes));
  }
  FERRY_ASSIGN_OR_RETURN(std::string record, read(begin, end - begin));
  if (record.size() != end - begin) {
    return DataLossError(fmt::format("record of sample {} is cut short", i));
  }
  RangedSample out;
  out.owner = std::make_shared<const std::string>(std::move(record));
  out.sample.config = shard.config.get();
  out.sample.fields.resize(shard.config->column_names.size());
  FERRY_RETURN_IF_ERROR(SplitRecord(*shard.config, *out.owner, out.sample.fields)
                            .WithContext(fmt::format("sample {}", i)));
  return std::optional<RangedSample>(std::move(out));
}

Result<std::shared_ptr<const SampleSpans>> MdsFormat::ReadSpans(
    const RangeRead& read, const ShardDescription& shard) const {
  // The sample count, then samples + 1 offsets.
  const uint64_t table_end = 4 + 4 * (uint64_t{shard.samples} + 1);
  if (table_end > shard.raw_data.bytes) {
    return DataLossError(
        fmt::format("an offset table of {} samples ({} bytes) does not fit in "
                    "the {} bytes index.json gives",
                    shard.samples, table_end, shard.raw_data.bytes));
  }
  FERRY_ASSIGN_OR_RETURN(std::string table, read(0, table_end));
  if (table.size() != table_end) {
    return DataLossError(
        fmt::format("offset table cut short: {} of {} bytes", table.size(), table_end));
  }
  if (const uint32_t n = LoadU32LE(table.data()); n != shard.samples) {
    return DataLossError(fmt::format("holds {} samples, index.json says {}", n, shard.samples));
  }
  std::vector<uint32_t> offsets(shard.samples + 1);
  for (size_t i = 0; i < offsets.size(); ++i) {
    offsets[i] = LoadU32LE(table.data() + 4 + 4 * i);
    const uint64_t floor = i == 0 ? table_end : offsets[i - 1];
    // The shard's config (JSON) lies between the table and the first record.
    if (offsets[i] < floor || offsets[i] > shard.raw_data.bytes) {
      return DataLossError(
          fmt::format("offset {} of sample {} is outside [{}, {}]: not an MDS offset table",
                      offsets[i], i, floor, shard.raw_data.bytes));
    }
  }
  return std::shared_ptr<const SampleSpans>(
      std::make_shared<const MdsSpans>(std::move(offsets), shard.config));
}

}  // namespace ferry::internal_format
