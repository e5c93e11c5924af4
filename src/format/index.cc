#include "ferry/format/index.h"

#include <fmt/format.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <set>

#include "base/python_json.h"
#include "format/compression.h"
#include "format/hash.h"
#include "format/split_shard.h"
#include "format/webdataset_index.h"

namespace ferry {
namespace {

using JsonDoc = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr std::array<std::string_view, 8> kConfigKeys = {
    "column_encodings", "column_names", "column_sizes", "compression",
    "format",           "hashes",       "size_limit",   "version"};
constexpr std::array<std::string_view, 11> kShardKeys = {
    "column_encodings", "column_names", "column_sizes", "compression", "format",  "hashes",
    "raw_data",         "samples",      "size_limit",   "version",     "zip_data"};
constexpr std::array<std::string_view, 3> kFileInfoKeys = {"basename", "bytes", "hashes"};
// Mosaic's split shards (JSONWriter; CSVWriter and TSVWriter).
constexpr std::array<std::string_view, 12> kJsonShardKeys = {
    "columns",  "compression", "format",     "hashes",  "newline",  "raw_data",
    "raw_meta", "samples",     "size_limit", "version", "zip_data", "zip_meta"};
constexpr std::array<std::string_view, 13> kXsvShardKeys = {
    "column_encodings", "column_names", "compression", "format",  "hashes",   "newline", "raw_data",
    "raw_meta",         "samples",      "size_limit",  "version", "zip_data", "zip_meta"};

// Builds error messages that say where in the index the problem is.
class Where {
 public:
  explicit Where(std::string prefix) : prefix_(std::move(prefix)) {}
  Status DataLoss(std::string_view what) const {
    return DataLossError(fmt::format("{}: {}", prefix_, what));
  }
  Status Invalid(std::string_view what) const {
    return InvalidArgumentError(fmt::format("{}: {}", prefix_, what));
  }
  Where Field(std::string_view name) const { return Where(fmt::format("{}: '{}'", prefix_, name)); }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
};

template <size_t N>
Status CheckExactKeys(const JsonDoc& obj, const std::array<std::string_view, N>& keys,
                      const Where& where) {
  if (!obj.is_object()) return where.DataLoss("expected a JSON object");
  for (const auto& key : keys) {
    if (!obj.contains(std::string(key)))
      return where.DataLoss(fmt::format("missing key '{}'", key));
  }
  if (obj.size() != keys.size()) {
    for (const auto& [key, unused] : obj.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        return where.DataLoss(fmt::format("unexpected key '{}'", key));
      }
    }
  }
  return Status::Ok();
}

Result<uint64_t> GetCount(const JsonDoc& v, const Where& where) {
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)) {
    return where.DataLoss("expected a non-negative integer");
  }
  return v.get<uint64_t>();
}

Result<std::string> GetString(const JsonDoc& v, const Where& where) {
  if (!v.is_string()) return where.DataLoss("expected a string");
  return v.get<std::string>();
}

Result<std::vector<std::string>> GetStringList(const JsonDoc& v, const Where& where) {
  if (!v.is_array()) return where.DataLoss("expected a list of strings");
  std::vector<std::string> out;
  for (const auto& item : v) {
    if (!item.is_string()) return where.DataLoss("expected a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Status ParseStorage(const JsonDoc& obj, const Where& where, ShardConfig& c);

// The eight config keys of a shard entry or an embedded config block.
Result<ShardConfig> ParseConfig(const JsonDoc& obj, const Where& where) {
  ShardConfig c;
  const auto& format = obj.at("format");
  if (!format.is_string() || format.get<std::string>() != "mds") {
    return where.Field("format").Invalid(
        fmt::format("{} is not a format ferry reads (mds, json, csv, tsv)", format.dump()));
  }
  const auto& version = obj.at("version");
  if (!version.is_number_integer() || version.get<int64_t>() != 2) {
    return where.Field("version").Invalid(
        fmt::format("only version 2 is supported, found {}", version.dump()));
  }
  FERRY_ASSIGN_OR_RETURN(c.column_names,
                         GetStringList(obj.at("column_names"), where.Field("column_names")));
  FERRY_ASSIGN_OR_RETURN(
      auto encodings, GetStringList(obj.at("column_encodings"), where.Field("column_encodings")));
  if (encodings.size() != c.column_names.size()) {
    return where.DataLoss(
        fmt::format("{} column names but {} encodings", c.column_names.size(), encodings.size()));
  }
  for (size_t i = 0; i < encodings.size(); ++i) {
    auto e = ColumnEncoding::Parse(encodings[i]);
    if (!e)
      return e.error().WithContext(
          fmt::format("{}: column '{}'", where.prefix(), c.column_names[i]));
    c.column_encodings.push_back(std::move(*e));
  }
  const JsonDoc& sizes = obj.at("column_sizes");
  if (!sizes.is_array() || sizes.size() != c.column_names.size()) {
    return where.Field("column_sizes").DataLoss("expected one size (or null) per column");
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::optional<uint32_t> size;
    if (!sizes[i].is_null()) {
      if (!sizes[i].is_number_unsigned() || sizes[i].get<uint64_t>() > UINT32_MAX) {
        return where.Field("column_sizes").DataLoss("expected a byte count or null per column");
      }
      size = static_cast<uint32_t>(sizes[i].get<uint64_t>());
    }
    if (size != c.column_encodings[i].fixed_size()) {
      return where.Field("column_sizes")
          .DataLoss(fmt::format("column '{}' ({}) has size {} but its encoding needs {}",
                                c.column_names[i], c.column_encodings[i].text(),
                                size ? std::to_string(*size) : "null",
                                c.column_encodings[i].fixed_size()
                                    ? std::to_string(*c.column_encodings[i].fixed_size())
                                    : "null"));
    }
    c.column_sizes.push_back(size);
  }
  std::set<std::string> unique(c.column_names.begin(), c.column_names.end());
  if (unique.size() != c.column_names.size()) {
    return where.Field("column_names").DataLoss("a column name appears twice");
  }
  FERRY_RETURN_IF_ERROR(ParseStorage(obj, where, c));
  return c;
}

// compression, hashes and size_limit, which every format's shard entry has.
Status ParseStorage(const JsonDoc& obj, const Where& where, ShardConfig& c) {
  const JsonDoc& compression = obj.at("compression");
  if (!compression.is_null()) {
    FERRY_ASSIGN_OR_RETURN(std::string spec, GetString(compression, where.Field("compression")));
    if (!spec.empty()) {
      auto parsed = Compression::Parse(spec);
      if (!parsed) return parsed.error().WithContext(where.prefix());
      c.compression = spec;
    }
  }
  FERRY_ASSIGN_OR_RETURN(c.hashes, GetStringList(obj.at("hashes"), where.Field("hashes")));
  for (const auto& h : c.hashes) {
    if (!IsKnownHash(h)) return where.Field("hashes").Invalid(fmt::format("unknown hash '{}'", h));
  }
  const JsonDoc& limit = obj.at("size_limit");
  if (!limit.is_null()) {
    FERRY_ASSIGN_OR_RETURN(uint64_t v, GetCount(limit, where.Field("size_limit")));
    if (v != 0) c.size_limit = v;
  }
  return Status::Ok();
}

Result<FileInfo> ParseFileInfo(const JsonDoc& obj, const ShardConfig& config, const Where& where) {
  FERRY_RETURN_IF_ERROR(CheckExactKeys(obj, kFileInfoKeys, where));
  FileInfo info;
  FERRY_ASSIGN_OR_RETURN(info.basename, GetString(obj.at("basename"), where.Field("basename")));
  FERRY_RETURN_IF_ERROR(ValidateBasename(info.basename).WithContext(where.prefix()));
  FERRY_ASSIGN_OR_RETURN(info.bytes, GetCount(obj.at("bytes"), where.Field("bytes")));
  const JsonDoc& hashes = obj.at("hashes");
  if (!hashes.is_object()) return where.Field("hashes").DataLoss("expected an object");
  for (const auto& [algo, digest] : hashes.items()) {
    if (!digest.is_string()) return where.Field("hashes").DataLoss("expected hex digests");
    info.hashes.emplace_back(algo, digest.get<std::string>());
  }
  for (const auto& algo : config.hashes) {
    if (info.FindHash(algo) == nullptr) {
      return where.Field("hashes").DataLoss(
          fmt::format("no '{}' digest, which the shard lists", algo));
    }
  }
  return info;
}

bool IsSplitFormat(std::string_view format) {
  return format == "json" || format == "csv" || format == "tsv";
}

// A shard entry of Mosaic's JSON, CSV or TSV format: a data file and a .meta companion.
Result<ShardDescription> ParseSplitShard(const JsonDoc& obj, const std::string& format,
                                         const Where& where) {
  if (format == "json") {
    FERRY_RETURN_IF_ERROR(CheckExactKeys(obj, kJsonShardKeys, where));
  } else {
    FERRY_RETURN_IF_ERROR(CheckExactKeys(obj, kXsvShardKeys, where));
  }
  const JsonDoc& version = obj.at("version");
  if (!version.is_number_integer() || version.get<int64_t>() != 2) {
    return where.Field("version").Invalid(
        fmt::format("only version 2 is supported, found {}", version.dump()));
  }
  ShardConfig c;
  if (format == "json") {
    const JsonDoc& columns = obj.at("columns");
    if (!columns.is_object()) return where.Field("columns").DataLoss("expected an object");
    for (const auto& [name, encoding] : columns.items()) {
      if (!encoding.is_string()) return where.Field("columns").DataLoss("expected encodings");
      c.column_names.push_back(name);
      c.split_encodings.push_back(encoding.get<std::string>());
    }
  } else {
    FERRY_ASSIGN_OR_RETURN(c.column_names,
                           GetStringList(obj.at("column_names"), where.Field("column_names")));
    FERRY_ASSIGN_OR_RETURN(c.split_encodings, GetStringList(obj.at("column_encodings"),
                                                            where.Field("column_encodings")));
    if (c.split_encodings.size() != c.column_names.size()) {
      return where.DataLoss(fmt::format("{} column names but {} encodings", c.column_names.size(),
                                        c.split_encodings.size()));
    }
    if (std::set<std::string>(c.column_names.begin(), c.column_names.end()).size() !=
        c.column_names.size()) {
      return where.Field("column_names").DataLoss("a column name appears twice");
    }
  }
  if (c.column_names.empty()) return where.DataLoss("no columns");
  for (size_t i = 0; i < c.column_names.size(); ++i) {
    auto encoding = internal_format::SplitFieldEncoding(format, c.split_encodings[i]);
    if (!encoding) {
      return encoding.error().WithContext(
          fmt::format("{}: column '{}'", where.prefix(), c.column_names[i]));
    }
    c.column_encodings.push_back(std::move(*encoding));
    c.column_sizes.emplace_back();
  }
  FERRY_ASSIGN_OR_RETURN(c.newline, GetString(obj.at("newline"), where.Field("newline")));
  if (c.newline.empty()) return where.Field("newline").DataLoss("is empty");
  FERRY_RETURN_IF_ERROR(ParseStorage(obj, where, c));

  ShardDescription entry;
  entry.format = format;
  entry.config = std::make_shared<const ShardConfig>(std::move(c));
  const ShardConfig& config = *entry.config;
  FERRY_ASSIGN_OR_RETURN(entry.samples, GetCount(obj.at("samples"), where.Field("samples")));
  FERRY_ASSIGN_OR_RETURN(entry.raw_data,
                         ParseFileInfo(obj.at("raw_data"), config, where.Field("raw_data")));
  CompanionFile meta;
  FERRY_ASSIGN_OR_RETURN(meta.raw,
                         ParseFileInfo(obj.at("raw_meta"), config, where.Field("raw_meta")));
  for (const auto& [key, file] :
       {std::pair{"zip_data", &entry.zip_data}, {"zip_meta", &meta.zip}}) {
    if (obj.at(key).is_null()) {
      if (config.compression) {
        return where.DataLoss(
            fmt::format("is compressed with '{}' but has no '{}'", *config.compression, key));
      }
      continue;
    }
    if (!config.compression) return where.DataLoss(fmt::format("has '{}' but no compression", key));
    FERRY_ASSIGN_OR_RETURN(*file, ParseFileInfo(obj.at(key), config, where.Field(key)));
  }
  // The .meta holds a count, then an offset per sample and one past the last, each 4 bytes.
  if (entry.samples > meta.raw.bytes / 4) {
    return where.DataLoss(
        fmt::format("{} samples cannot fit in a .meta of {} bytes", entry.samples, meta.raw.bytes));
  }
  entry.companions.push_back(std::move(meta));
  return entry;
}

OrderedJson FileInfoJson(const FileInfo& f);

// A split shard's entry as Mosaic's writers make it: the writer's config, its files and count.
OrderedJson SplitShardJson(const ShardDescription& s) {
  OrderedJson j = internal_format::SplitConfigJson(s.format, *s.config);
  const CompanionFile& meta = s.companions.at(0);
  j["raw_data"] = FileInfoJson(s.raw_data);
  j["raw_meta"] = FileInfoJson(meta.raw);
  j["samples"] = s.samples;
  j["zip_data"] = s.zip_data ? FileInfoJson(*s.zip_data) : OrderedJson(nullptr);
  j["zip_meta"] = meta.zip ? FileInfoJson(*meta.zip) : OrderedJson(nullptr);
  return j;
}

OrderedJson ConfigJson(const ShardConfig& c) {
  OrderedJson j = OrderedJson::object();
  OrderedJson encodings = OrderedJson::array();
  for (const auto& e : c.column_encodings) encodings.push_back(e.text());
  j["column_encodings"] = std::move(encodings);
  j["column_names"] = c.column_names;
  OrderedJson sizes = OrderedJson::array();
  for (const auto& s : c.column_sizes) sizes.push_back(s ? OrderedJson(*s) : OrderedJson(nullptr));
  j["column_sizes"] = std::move(sizes);
  j["compression"] = c.compression ? OrderedJson(*c.compression) : OrderedJson(nullptr);
  j["format"] = "mds";
  j["hashes"] = c.hashes;
  j["size_limit"] = c.size_limit ? OrderedJson(*c.size_limit) : OrderedJson(nullptr);
  j["version"] = 2;
  return j;
}

OrderedJson FileInfoJson(const FileInfo& f) {
  OrderedJson hashes = OrderedJson::object();
  for (const auto& [algo, digest] : f.hashes) hashes[algo] = digest;
  return OrderedJson{{"basename", f.basename}, {"bytes", f.bytes}, {"hashes", std::move(hashes)}};
}

}  // namespace

Result<DatasetDescription> ParseIndexFile(std::string_view text, std::string_view origin) {
  Result<DatasetDescription> parsed = internal_format::IsWebDatasetIndex(text)
                                          ? internal_format::ParseWebDatasetIndex(text, origin)
                                          : ParseIndex(text, origin);
#ifdef __GLIBC__
  // The JSON document of a large index is millions of small nodes, freed now between the
  // description's own allocations: glibc keeps those pages (some 230 MB for 100,000 shards)
  // unless told to give them back.
  constexpr size_t kLargeIndexBytes = size_t{4} << 20;
  if (text.size() >= kLargeIndexBytes) ::malloc_trim(0);
#endif
  return parsed;
}

Status ValidateBasename(std::string_view basename) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format("basename '{}' {}", basename, why));
  };
  if (basename.empty()) return bad("is empty");
  if (basename.front() == '/') return bad("is absolute; it must be relative to the index folder");
  if (basename.find('\\') != std::string_view::npos) return bad("contains a backslash");
  if (basename.find('\0') != std::string_view::npos) return bad("contains a NUL byte");
  size_t start = 0;
  for (;;) {
    const size_t slash = basename.find('/', start);
    const std::string_view part = basename.substr(start, slash - start);
    if (part.empty()) return bad("has an empty path component");
    if (part == ".") return bad("has a '.' component");
    if (part == "..") return bad("contains '..', which would leave the dataset folder");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

std::string RawShardBasename(uint64_t ordinal) { return fmt::format("shard.{:05}.mds", ordinal); }

Result<DatasetDescription> ParseIndex(std::string_view text, std::string_view origin) {
  JsonDoc root;
  try {
    root = JsonDoc::parse(text);
  } catch (const JsonDoc::exception& e) {
    return DataLossError(fmt::format("{}: index is not valid JSON: {}", origin, e.what()));
  }
  const Where where{std::string(origin)};
  if (!root.is_object()) return where.DataLoss("index is not a JSON object");
  if (!root.contains("version")) return where.DataLoss("index has no 'version'");
  if (!root["version"].is_number_integer() || root["version"].get<int64_t>() != 2) {
    return where.Invalid(
        fmt::format("index version {} is not supported (only 2)", root["version"].dump()));
  }
  if (!root.contains("shards") || !root["shards"].is_array()) {
    return where.DataLoss("index has no 'shards' list");
  }
  DatasetDescription index;
  index.shards.reserve(root["shards"].size());
  std::shared_ptr<const ShardConfig> last_config;
  for (size_t i = 0; i < root["shards"].size(); ++i) {
    const JsonDoc& obj = root["shards"][i];
    const Where shard_where(fmt::format("{}: shard {}", origin, i));
    if (obj.is_object() && obj.contains("format") && obj["format"].is_string() &&
        IsSplitFormat(obj["format"].get<std::string>())) {
      FERRY_ASSIGN_OR_RETURN(ShardDescription entry,
                             ParseSplitShard(obj, obj["format"].get<std::string>(), shard_where));
      // Shards of one writer run share one config object.
      if (last_config && *last_config == *entry.config) entry.config = last_config;
      last_config = entry.config;
      index.shards.push_back(std::move(entry));
      continue;
    }
    FERRY_RETURN_IF_ERROR(CheckExactKeys(obj, kShardKeys, shard_where));
    FERRY_ASSIGN_OR_RETURN(ShardConfig config, ParseConfig(obj, shard_where));
    ShardDescription entry;
    // Shards of one writer run share one config object.
    if (last_config && *last_config == config) {
      entry.config = last_config;
    } else {
      entry.config = last_config = std::make_shared<const ShardConfig>(std::move(config));
    }
    FERRY_ASSIGN_OR_RETURN(entry.samples, GetCount(obj["samples"], shard_where.Field("samples")));
    FERRY_ASSIGN_OR_RETURN(entry.raw_data, ParseFileInfo(obj["raw_data"], *entry.config,
                                                         shard_where.Field("raw_data")));
    if (!obj["zip_data"].is_null()) {
      if (!entry.config->compression) {
        return shard_where.DataLoss("has 'zip_data' but no compression");
      }
      FERRY_ASSIGN_OR_RETURN(entry.zip_data, ParseFileInfo(obj["zip_data"], *entry.config,
                                                           shard_where.Field("zip_data")));
    } else if (entry.config->compression) {
      return shard_where.DataLoss(
          fmt::format("is compressed with '{}' but has no 'zip_data'", *entry.config->compression));
    }
    // offsets are u32 and hold one slot per sample plus the header.
    if (entry.raw_data.bytes >= (uint64_t{1} << 32)) {
      return shard_where.DataLoss(fmt::format(
          "raw shard of {} bytes exceeds the 4 GiB format limit", entry.raw_data.bytes));
    }
    if (entry.samples > (entry.raw_data.bytes / 4)) {
      return shard_where.DataLoss(fmt::format("{} samples cannot fit in a raw shard of {} bytes",
                                              entry.samples, entry.raw_data.bytes));
    }
    index.shards.push_back(std::move(entry));
  }
  return index;
}

Result<ShardConfig> ParseShardConfig(std::string_view text) {
  JsonDoc obj;
  try {
    obj = JsonDoc::parse(text);
  } catch (const JsonDoc::exception& e) {
    return DataLossError(fmt::format("config block is not valid JSON: {}", e.what()));
  }
  const Where where("config block");
  FERRY_RETURN_IF_ERROR(CheckExactKeys(obj, kConfigKeys, where));
  auto config = ParseConfig(obj, where);
  if (!config) return DataLossError(config.error().message());
  return config;
}

std::string SerializeShardConfig(const ShardConfig& config) {
  return DumpPythonJson(ConfigJson(config), JsonKeyOrder::kSorted);
}

std::string SerializeIndex(const DatasetDescription& index) {
  OrderedJson shards = OrderedJson::array();
  for (const auto& s : index.shards) {
    if (IsSplitFormat(s.format)) {
      shards.push_back(SplitShardJson(s));
      continue;
    }
    OrderedJson j = ConfigJson(*s.config);
    j["raw_data"] = FileInfoJson(s.raw_data);
    j["samples"] = s.samples;
    j["zip_data"] = s.zip_data ? FileInfoJson(*s.zip_data) : OrderedJson(nullptr);
    shards.push_back(std::move(j));
  }
  OrderedJson root{{"shards", std::move(shards)}, {"version", 2}};
  return DumpPythonJson(root, JsonKeyOrder::kSorted);
}

}  // namespace ferry
