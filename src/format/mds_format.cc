#include "format/mds_format.h"

#include <fmt/format.h>

#include "base/little_endian.h"
#include "ferry/format/mds_shard_reader.h"

namespace ferry::internal_format {

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

}  // namespace ferry::internal_format
