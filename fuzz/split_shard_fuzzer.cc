// Fuzzes the JSON/CSV/TSV shard decoder and field splitter: the first byte picks the format, the
// next two the .meta length; the rest is .meta then data. Any input is an error or samples that
// decode.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/split_shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static const char* const kFormats[] = {"json", "csv", "tsv"};
  ferry::internal_format::SplitShardConfig config{.format = kFormats[data[0] % 3],
                                                  .column_names = {"a", "b", "c"},
                                                  .column_encodings = {"int", "float", "str"}};
  const size_t meta_size = std::min<size_t>(size - 3, data[1] | (data[2] << 8));
  const char* rest = reinterpret_cast<const char*>(data) + 3;
  auto shard =
      ferry::internal_format::SplitShard::Open(std::string(rest + meta_size, size - 3 - meta_size),
                                               std::string(rest, meta_size), config, "fuzz");
  if (!shard.ok()) return 0;
  std::vector<std::string_view> fields;
  for (uint32_t i = 0; i < shard->num_samples() && i < 64; ++i) {
    (void)shard->Decode(i);
    (void)shard->Fields(i, fields);  // views must stay inside the data
  }
  return 0;
}
