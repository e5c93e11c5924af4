// Fuzzes the shard reader and every payload decoder. The input is a raw shard; its index entry
// is derived from the input itself (sample count from the header, config from the embedded
// block when it parses, else a fixed schema covering many encodings), so the fuzzer reaches the
// offset, record and payload checks instead of stopping at the index comparison.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ferry/format/encoding.h"
#include "ferry/format/index.h"
#include "ferry/format/mds_shard_reader.h"

namespace {

std::shared_ptr<const ferry::ShardConfig> FallbackConfig() {
  static const auto config = [] {
    auto c = std::make_shared<ferry::ShardConfig>();
    const char* columns[][2] = {{"a", "ndarray"},     {"b", "list[pil]"}, {"c", "jpeg_array"},
                                {"d", "str_decimal"}, {"e", "str_int"},   {"f", "pil"},
                                {"g", "str"},         {"h", "int"},       {"i", "float16"}};
    for (const auto& [name, encoding] : columns) {
      auto e = ferry::ColumnEncoding::Parse(encoding).value();
      c->column_names.push_back(name);
      c->column_sizes.push_back(e.fixed_size());
      c->column_encodings.push_back(std::move(e));
    }
    return c;
  }();
  return config;
}

uint32_t U32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  ferry::ShardDescription entry;
  entry.raw_data.bytes = size;
  entry.config = FallbackConfig();
  if (size >= 8) {
    const uint64_t n = U32(data);
    entry.samples = n;
    const uint64_t table_end = 4 + 4 * (n + 1);
    if (table_end <= size) {
      const uint64_t first = U32(data + 4);
      if (first >= table_end && first <= size) {
        auto config = ferry::ParseShardConfig(bytes.substr(table_end, first - table_end));
        if (config) entry.config = std::make_shared<const ferry::ShardConfig>(std::move(*config));
      }
    }
  }
  auto reader = ferry::MdsShardReader::FromBuffer(std::move(bytes), entry, "fuzz");
  if (!reader) return 0;
  std::vector<std::string_view> fields(reader->num_columns());
  const uint32_t n = std::min<uint32_t>(reader->num_samples(), 4096);
  for (uint32_t i = 0; i < n; ++i) {
    if (!reader->ReadFields(i, fields).ok()) continue;
    for (size_t c = 0; c < fields.size(); ++c) {
      auto value = ferry::DecodeValue(reader->config().column_encodings[c], fields[c]);
      if (value) {
        // Whatever decodes must encode again (the writer accepts what the reader returns).
        std::string out;
        (void)ferry::EncodeValue(reader->config().column_encodings[c], *value, out);
      }
    }
  }
  return 0;
}
