#include "format/split_shard.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <utility>

#include "base/ascii.h"
#include "base/little_endian.h"

namespace ferry::internal_format {
namespace {

// Python's int(text) or float(text) for the numbers Mosaic writes (decimal and exponent forms,
// inf and nan for floats): surrounding whitespace and a leading '+' allowed, nothing else.
template <typename T>
bool ParseNumber(std::string_view text, nlohmann::json& out) {
  text = TrimAsciiWhitespace(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  T v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return false;
  out = v;
  return true;
}

}  // namespace

Result<SplitShard> SplitShard::Open(std::string data, std::string meta, SplitShardConfig config,
                                    std::string name) {
  const bool xsv = config.format == "csv" || config.format == "tsv";
  if (!xsv && config.format != "json") {
    return InvalidArgumentError(
        fmt::format("{}: format {} is not json, csv or tsv", name, config.format));
  }
  if (xsv && (config.column_names.empty() ||
              config.column_names.size() != config.column_encodings.size())) {
    return DataLossError(
        fmt::format("{}: {} columns need a name and an encoding each", name, config.format));
  }
  for (const std::string& encoding : config.column_encodings) {
    if (encoding != "str" && encoding != "int" && encoding != "float") {
      return DataLossError(
          fmt::format("{}: column encoding {} is not str, int or float", name, encoding));
    }
  }
  if (config.newline.empty()) return DataLossError(fmt::format("{}: empty newline", name));
  if (meta.size() < 4) return DataLossError(fmt::format("{}: .meta file is too short", name));
  const uint64_t n = LoadU32LE(meta.data());
  if (meta.size() < 4 + 4 * (n + 1)) {
    return DataLossError(
        fmt::format("{}: .meta holds {} bytes, too few for {} samples", name, meta.size(), n));
  }
  SplitShard shard;
  shard.offsets_.resize(n + 1);
  for (uint64_t i = 0; i <= n; ++i) {
    shard.offsets_[i] = LoadU32LE(meta.data() + 4 + 4 * i);
    if (i > 0 && shard.offsets_[i] < shard.offsets_[i - 1]) {
      return DataLossError(fmt::format("{}: .meta offset {} goes backwards", name, i));
    }
  }
  if (shard.offsets_.back() > data.size()) {
    return DataLossError(fmt::format("{}: .meta offsets run to byte {}, past the data's {}", name,
                                     shard.offsets_.back(), data.size()));
  }
  shard.data_ = std::move(data);
  shard.config_ = std::move(config);
  shard.name_ = std::move(name);
  return shard;
}

Status SplitShard::SampleError(uint32_t i, std::string_view what) const {
  return DataLossError(fmt::format("{}: sample {}: {}", name_, i, what));
}

Result<std::string_view> SplitShard::Text(uint32_t i) const {
  if (i >= num_samples()) {
    return OutOfRangeError(fmt::format("{}: sample {} of {}", name_, i, num_samples()));
  }
  std::string_view text(data_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]);
  if (!text.ends_with(config_.newline)) return SampleError(i, "does not end with its newline");
  text.remove_suffix(config_.newline.size());
  return text;
}

Result<nlohmann::json> SplitShard::Decode(uint32_t i) const {
  FERRY_ASSIGN_OR_RETURN(std::string_view text, Text(i));
  if (config_.format == "json") {
    nlohmann::json obj = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!obj.is_object()) return SampleError(i, "is not a JSON object");
    return obj;
  }
  const char separator = config_.format == "csv" ? ',' : '\t';
  nlohmann::json obj = nlohmann::json::object();
  size_t column = 0;
  for (;;) {
    const size_t cut = text.find(separator);
    const std::string_view part = text.substr(0, cut);
    if (column >= config_.column_names.size()) {
      return SampleError(i, fmt::format("more than {} fields", config_.column_names.size()));
    }
    const std::string& encoding = config_.column_encodings[column];
    nlohmann::json& value = obj[config_.column_names[column]];
    if (encoding == "str") {
      value = std::string(part);
    } else if (!(encoding == "int" ? ParseNumber<int64_t>(part, value)
                                   : ParseNumber<double>(part, value))) {
      return SampleError(i, fmt::format("column {}: '{}' is not an {}",
                                        config_.column_names[column], part, encoding));
    }
    ++column;
    if (cut == std::string_view::npos) break;
    text.remove_prefix(cut + 1);
  }
  if (column != config_.column_names.size()) {
    return SampleError(i, fmt::format("{} fields, not {}", column, config_.column_names.size()));
  }
  return obj;
}

}  // namespace ferry::internal_format
