#include "format/split_shard.h"

#include <fmt/format.h>

#include <algorithm>
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

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipJsonSpace(std::string_view t, size_t p) {
  while (p < t.size() && IsJsonSpace(t[p])) ++p;
  return p;
}

// From the opening quote at `p` to just past the closing one.
size_t SkipJsonString(std::string_view t, size_t p) {
  for (++p; p < t.size() && t[p] != '"'; ++p) {
    if (t[p] == '\\') ++p;
  }
  return std::min(p + 1, t.size());
}

size_t SkipJsonValue(std::string_view t, size_t p) {
  if (p >= t.size()) return p;
  if (t[p] == '"') return SkipJsonString(t, p);
  if (t[p] == '{' || t[p] == '[') {
    int depth = 0;
    while (p < t.size()) {
      const char c = t[p];
      if (c == '"') {
        p = SkipJsonString(t, p);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      ++p;
      if (depth == 0) break;
    }
    return p;
  }
  while (p < t.size() && t[p] != ',' && t[p] != '}' && t[p] != ']' && !IsJsonSpace(t[p])) ++p;
  return p;
}

// Calls fn(key, value text) for each member of `text`, a JSON object that nlohmann::json::accept
// has passed (so every string and bracket closes); kInvalidArgument when it is another value.
template <typename Fn>
Status ForEachJsonMember(std::string_view t, Fn&& fn) {
  size_t p = SkipJsonSpace(t, 0);
  if (p >= t.size() || t[p] != '{') return InvalidArgumentError("is not a JSON object");
  p = SkipJsonSpace(t, p + 1);
  if (p < t.size() && t[p] == '}') return Status::Ok();
  while (p < t.size()) {
    const size_t key_end = SkipJsonString(t, p);
    const std::string_view quoted = t.substr(p, key_end - p);
    // Read once per sample: a key without escapes (every key Mosaic writes) is a view, not a
    // copy.
    std::string_view key = quoted.substr(1, quoted.size() - 2);
    std::string unescaped;
    if (key.find('\\') != std::string_view::npos) {
      unescaped = nlohmann::json::parse(quoted).get<std::string>();
      key = unescaped;
    }
    p = SkipJsonSpace(t, SkipJsonSpace(t, key_end) + 1);  // past the ':'
    const size_t value_end = SkipJsonValue(t, p);
    FERRY_RETURN_IF_ERROR(fn(key, t.substr(p, value_end - p)));
    p = SkipJsonSpace(t, value_end);
    if (p >= t.size() || t[p] == '}') break;
    p = SkipJsonSpace(t, p + 1);  // past the ','
  }
  return Status::Ok();
}

}  // namespace

Result<ColumnEncoding> SplitFieldEncoding(std::string_view format, std::string_view encoding) {
  if (encoding != "str" && encoding != "int" && encoding != "float") {
    return InvalidArgumentError(fmt::format("encoding '{}' is not str, int or float", encoding));
  }
  if (format == "json") return ColumnEncoding::Parse("json");
  if (encoding == "str") return ColumnEncoding::Parse("str");
  return ColumnEncoding::Parse(fmt::format("str_{}", encoding));
}

nlohmann::ordered_json SplitConfigJson(std::string_view format, const ShardConfig& c) {
  using Json = nlohmann::ordered_json;
  Json j = Json::object();
  if (format == "json") {
    Json columns = Json::object();
    for (size_t i = 0; i < c.column_names.size(); ++i)
      columns[c.column_names[i]] = c.split_encodings[i];
    j["columns"] = std::move(columns);
  } else {
    j["column_encodings"] = c.split_encodings;
    j["column_names"] = c.column_names;
  }
  j["compression"] = c.compression ? Json(*c.compression) : Json(nullptr);
  j["format"] = format;
  j["hashes"] = c.hashes;
  j["newline"] = c.newline;
  j["size_limit"] = c.size_limit ? Json(*c.size_limit) : Json(nullptr);
  j["version"] = 2;
  return j;
}

Result<SplitShard> SplitShard::Open(std::string data, std::string meta, SplitShardConfig config,
                                    std::string name) {
  auto owned = std::make_shared<const std::string>(std::move(data));
  const std::string_view view = *owned;
  return Open(view, meta, std::move(owned), std::move(config), std::move(name));
}

Result<SplitShard> SplitShard::Open(std::string_view data, std::string_view meta,
                                    std::shared_ptr<const void> owner, SplitShardConfig config,
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
  shard.owner_ = std::move(owner);
  shard.data_ = data;
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

Status SplitShard::Fields(uint32_t i, std::vector<std::string_view>& out) const {
  FERRY_ASSIGN_OR_RETURN(std::string_view text, Text(i));
  const size_t columns = config_.column_names.size();
  out.clear();
  if (config_.format == "json") {
    out.resize(columns);
    if (!nlohmann::json::accept(text)) return SampleError(i, "is not valid JSON");
    size_t found = 0;
    Status status = ForEachJsonMember(text, [&](std::string_view key, std::string_view value) {
      const auto it = std::find(config_.column_names.begin(), config_.column_names.end(), key);
      if (it == config_.column_names.end()) {
        return SampleError(i, fmt::format("'{}' is not a column of the shard", key));
      }
      std::string_view& field = out[static_cast<size_t>(it - config_.column_names.begin())];
      if (field.data() != nullptr) return SampleError(i, fmt::format("'{}' appears twice", key));
      field = value;
      ++found;
      return Status::Ok();
    });
    if (!status.ok()) {
      return status.code() == StatusCode::kDataLoss ? status : SampleError(i, status.message());
    }
    if (found != columns) {
      for (size_t c = 0; c < columns; ++c) {
        if (out[c].data() == nullptr) {
          return SampleError(i, fmt::format("has no '{}'", config_.column_names[c]));
        }
      }
    }
    return Status::Ok();
  }
  const char separator = config_.format == "csv" ? ',' : '\t';
  for (;;) {
    const size_t cut = text.find(separator);
    if (out.size() == columns) return SampleError(i, fmt::format("more than {} fields", columns));
    out.push_back(text.substr(0, cut));
    if (cut == std::string_view::npos) break;
    text.remove_prefix(cut + 1);
  }
  if (out.size() != columns) {
    return SampleError(i, fmt::format("{} fields, not {}", out.size(), columns));
  }
  return Status::Ok();
}

Result<nlohmann::json> SplitShard::Decode(uint32_t i) const {
  FERRY_ASSIGN_OR_RETURN(std::string_view text, Text(i));
  if (config_.format == "json") {
    nlohmann::json obj = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!obj.is_object()) return SampleError(i, "is not a JSON object");
    return obj;
  }
  std::vector<std::string_view> fields;
  FERRY_RETURN_IF_ERROR(Fields(i, fields));
  nlohmann::json obj = nlohmann::json::object();
  for (size_t column = 0; column < fields.size(); ++column) {
    const std::string& encoding = config_.column_encodings[column];
    nlohmann::json& value = obj[config_.column_names[column]];
    if (encoding == "str") {
      value = std::string(fields[column]);
    } else if (!(encoding == "int" ? ParseNumber<int64_t>(fields[column], value)
                                   : ParseNumber<double>(fields[column], value))) {
      return SampleError(i, fmt::format("column {}: '{}' is not an {}",
                                        config_.column_names[column], fields[column], encoding));
    }
  }
  return obj;
}

}  // namespace ferry::internal_format
