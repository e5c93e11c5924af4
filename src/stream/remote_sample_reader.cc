#include "stream/remote_sample_reader.h"

#include <fmt/format.h>

#include "base/little_endian.h"
#include "ferry/metrics/metrics.h"

namespace ferry::internal_stream {

Result<std::string> ReadRemoteRecord(ObjectStore& store, const std::string& key,
                                     const ShardEntry& entry, uint64_t index) {
  if (index >= entry.samples) {
    return OutOfRangeError(
        fmt::format("{}: sample {} of {}", store.ToUrl(key), index, entry.samples));
  }
  FERRY_ASSIGN_OR_RETURN(std::string bounds, store.GetRange(key, 4 + 4 * index, 8));
  if (bounds.size() != 8) {
    return DataLossError(
        fmt::format("{}: offsets of sample {} are cut short", store.ToUrl(key), index));
  }
  const uint64_t begin = LoadU32LE(bounds.data());
  const uint64_t end = LoadU32LE(bounds.data() + 4);
  const uint64_t table_end = 4 + 4 * (entry.samples + 1);
  if (begin < table_end || end < begin || end > entry.raw_data.bytes) {
    return DataLossError(
        fmt::format("{}: sample {} spans [{}, {}) which is not inside the shard "
                    "({} bytes)",
                    store.ToUrl(key), index, begin, end, entry.raw_data.bytes));
  }
  FERRY_ASSIGN_OR_RETURN(std::string record, store.GetRange(key, begin, end - begin));
  if (record.size() != end - begin) {
    return DataLossError(
        fmt::format("{}: record of sample {} is cut short", store.ToUrl(key), index));
  }
  metrics::GetCounter("/ferry/stream/direct_reads").Add();
  return record;
}

}  // namespace ferry::internal_stream
