#include "cli/convert_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <variant>

#include "base/python_float.h"
#include "cli/dataset_uploader.h"
#include "cli/progress.h"
#include "cli/scratch_folder.h"
#include "ferry/format/encoding.h"
#include "ferry/format/mds_writer.h"
#include "ferry/format/split_writer.h"
#include "ferry/stream/streaming_dataset.h"
#include "format/shard_pattern.h"
#include "format/webdataset_index.h"
#include "format/webdataset_writer.h"
#include "storage/http/http_types.h"
#include "storage/object_key.h"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;
using internal_format::WebDatasetFieldData;

// A column's bytes as a WebDataset field: the payload where it is the value's file form, decimal
// text for numbers; `scratch` holds text made here.
Result<std::string_view> FieldBytes(const ColumnEncoding& encoding, std::string_view payload,
                                    std::string& scratch) {
  const EncodingKind kind = encoding.kind();
  if (IsBinaryIntKind(kind) || IsBinaryFloatKind(kind)) {
    FERRY_ASSIGN_OR_RETURN(const Value value, DecodeValue(encoding, payload));
    if (const auto* i = std::get_if<int64_t>(&value)) {
      scratch = std::to_string(*i);
    } else if (const auto* u = std::get_if<uint64_t>(&value)) {
      scratch = std::to_string(*u);
    } else if (const auto* d = std::get_if<double>(&value)) {
      scratch = FormatPythonFloat(*d);
    } else {
      return InternalError(fmt::format("encoding {} decoded to no number", encoding.text()));
    }
    return std::string_view(scratch);
  }
  switch (kind) {
    case EncodingKind::kBytes:
    case EncodingKind::kStr:
    case EncodingKind::kJson:
    case EncodingKind::kJpeg:
    case EncodingKind::kPng:
    case EncodingKind::kStrInt:
    case EncodingKind::kStrFloat:
    case EncodingKind::kStrDecimal:
      return payload;
    default:
      return InvalidArgumentError(
          fmt::format("has no file form for a WebDataset field (encoding {})", encoding.text()));
  }
}

// A WebDataset field's type in a JSON, CSV or TSV dataset, by the field's extension as
// WebDataset's own decoders read it (text for .txt, an int for .cls); empty for a binary field.
std::string_view SplitTypeOfField(std::string_view field) {
  if (field == "__key__" || field == "txt" || field == "text" || field == "transcript") {
    return "str";
  }
  if (field == "cls" || field == "cls2" || field == "index" || field == "inx" || field == "id") {
    return "int";
  }
  return {};
}

// How a source column becomes a column of a JSON, CSV or TSV dataset, which holds only str, int
// and float values.
struct SplitColumn {
  std::string type;        // "str", "int" or "float"
  ColumnEncoding decode;   // what the stored bytes are read as
  bool json_text = false;  // a JSON string literal (a JSON dataset's str column)
};

Result<SplitColumn> ToSplitColumn(std::string_view from, const ShardConfig& config, size_t f) {
  const std::string& name = config.column_names[f];
  const ColumnEncoding& encoding = config.column_encodings[f];
  auto column = [](std::string type, std::string_view decode,
                   bool json_text = false) -> Result<SplitColumn> {
    FERRY_ASSIGN_OR_RETURN(ColumnEncoding e, ColumnEncoding::Parse(decode));
    return SplitColumn{std::move(type), std::move(e), json_text};
  };
  if (!config.split_encodings.empty()) {  // JSON, CSV or TSV: the same type
    const std::string& type = config.split_encodings[f];
    if (encoding.kind() != EncodingKind::kJson) return column(type, encoding.text());
    if (type == "str") return column(type, "str", /*json_text=*/true);
    return column(type, fmt::format("str_{}", type));  // a JSON number is its Python text
  }
  if (from == "webdataset") {
    const std::string_view type = SplitTypeOfField(name);
    if (type.empty()) {
      return InvalidArgumentError(fmt::format(
          "field '{}' holds bytes: a JSON, CSV or TSV dataset holds only text (__key__, txt, "
          "text, transcript) and integers (cls, cls2, index, inx, id)",
          name));
    }
    return column(std::string(type), type == "str" ? "str" : "str_int");
  }
  const EncodingKind kind = encoding.kind();
  if (kind == EncodingKind::kStr) return column("str", "str");
  if (IsBinaryIntKind(kind) || kind == EncodingKind::kStrInt) return column("int", encoding.text());
  if (IsBinaryFloatKind(kind) || kind == EncodingKind::kStrFloat) {
    return column("float", encoding.text());
  }
  return InvalidArgumentError(
      fmt::format("column '{}' is {}: a JSON, CSV or TSV dataset holds only str, int and float "
                  "columns",
                  name, encoding.text()));
}

// The value of a SplitColumn's stored bytes.
Result<Value> SplitValue(const SplitColumn& column, std::string_view payload) {
  if (column.json_text) {
    const auto parsed = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_string()) {
      return DataLossError(fmt::format("'{}' is not a JSON string", payload.substr(0, 64)));
    }
    return Value(parsed.get<std::string>());
  }
  FERRY_ASSIGN_OR_RETURN(Value value, DecodeValue(column.decode, payload));
  if (std::holds_alternative<NumberText>(value)) {
    return InvalidArgumentError(
        fmt::format("{} does not fit in 64 bits, as a JSON, CSV or TSV int must",
                    std::get<NumberText>(value).text));
  }
  return value;
}

struct Output {
  std::unique_ptr<ScratchFolder> staging;  // for a store OUT
  fs::path folder;
  std::unique_ptr<DatasetUploader> uploader;
  std::function<void(const std::string&)> on_shard_written;
};

Result<Output> OpenOutput(const StoreAndKey& out) {
  Output o;
  if (auto local = out.store->LocalPath(out.key)) {
    o.folder = *local;
    return o;
  }
  FERRY_ASSIGN_OR_RETURN(o.staging, ScratchFolder::Create("convert"));
  o.folder = o.staging->path();
  o.uploader = std::make_unique<DatasetUploader>(out.store, out.key, o.folder,
                                                 DatasetUploaderOptions{.keep_local = false});
  o.on_shard_written = [u = o.uploader.get()](const std::string& basename) { u->Add(basename); };
  return o;
}

// What an MDS or split writer takes from the conversion and its output alike.
template <typename WriterOptions>
void SetOutputOptions(const DatasetConversion& c, const Output& output, WriterOptions& o) {
  o.out = output.folder;
  o.compression = c.compression;
  o.hashes = c.hashes;
  o.size_limit = c.size_limit;
  o.exist_ok = c.overwrite || output.staging != nullptr;
  if (output.on_shard_written) o.on_shard_written = output.on_shard_written;
}

}  // namespace

Result<bool> IsDatasetSource(std::string_view url) {
  if (internal_format::IsShardPattern(url)) return true;
  FERRY_ASSIGN_OR_RETURN(const StoreAndKey src, OpenUrl(url));
  auto head = src.store->Head(JoinKey(src.key, "index.json"));
  if (head) return true;
  if (head.error().code() != StatusCode::kNotFound) return head.error();
  const std::string prefix = FolderKey(src.key);
  auto listing = src.store->List(prefix, /*recursive=*/false);
  if (!listing) {
    const StatusCode code = listing.error().code();
    if (code == StatusCode::kNotFound || code == StatusCode::kUnimplemented) return false;
    return listing.error();
  }
  // Tars beside other files are still a WebDataset folder, as StreamingDataset reads it.
  return std::any_of(listing->objects.begin(), listing->objects.end(), [&](const ObjectInfo& o) {
    return internal_format::IsTarShardName(std::string_view(o.key).substr(prefix.size()));
  });
}

Result<int> ConvertDataset(const DatasetConversion& c) {
  const auto started = std::chrono::steady_clock::now();
  if (c.to != "mds" && c.to != "webdataset" && c.to != "json" && c.to != "csv" && c.to != "tsv") {
    return InvalidArgumentError(fmt::format("--to {}: mds, webdataset, json, csv or tsv", c.to));
  }
  FERRY_ASSIGN_OR_RETURN(const StoreAndKey out, OpenUrl(c.out));
  const std::string out_name = out.store->LocalPath(out.key) ? c.out : http::RedactUrl(c.out);

  // The source, read in order: in place when local, through a scratch cache from a store (or
  // when named by a pattern, whose folder may hold other shards).
  std::optional<std::filesystem::path> local;
  if (!internal_format::IsShardPattern(c.src)) {
    FERRY_ASSIGN_OR_RETURN(const StoreAndKey src, OpenUrl(c.src));
    local = src.store->LocalPath(src.key);
  }
  std::unique_ptr<ScratchFolder> cache;
  StreamingOptions options;
  StreamSpec spec;
  if (local) {
    spec.local = local->string();
  } else {
    FERRY_ASSIGN_OR_RETURN(cache, ScratchFolder::Create("convert-cache"));
    spec.remote = c.src;
    spec.local = cache->path().string();
  }
  options.streams = {spec};
  options.allow_unsafe_types = true;  // pkl payloads are copied, never unpickled
  FERRY_ASSIGN_OR_RETURN(const std::shared_ptr<StreamingDataset> ds,
                         StreamingDataset::Open(options));
  const std::string from = ds->indexes().front()->shards.front().format;
  if (from == "mds" && c.to == "mds") {
    return InvalidArgumentError(
        fmt::format("{} is an MDS dataset already (ferry cp copies it)", c.src));
  }
  FERRY_ASSIGN_OR_RETURN(Output output, OpenOutput(out));
  FERRY_ASSIGN_OR_RETURN(const std::unique_ptr<SampleIterator> it, ds->Iterate({}));
  ProgressBar progress("convert", "samples", ds->num_samples(), !c.quiet);
  uint64_t samples = 0;
  uint64_t bytes = 0;
  DatasetDescription written;

  if (c.to == "webdataset") {
    FERRY_ASSIGN_OR_RETURN(auto writer,
                           internal_format::WebDatasetWriter::Create(
                               {.out = output.folder,
                                .size_limit = c.size_limit.value_or(UINT64_MAX),  // none: one shard
                                .exist_ok = c.overwrite || output.staging != nullptr,
                                .on_shard_written = output.on_shard_written}));
    std::vector<WebDatasetFieldData> fields;
    std::vector<std::string> scratch;
    for (;;) {
      FERRY_ASSIGN_OR_RETURN(std::optional<Sample> sample, it->Next());
      if (!sample) break;
      const ShardConfig& config = *sample->config;
      fields.clear();
      scratch.resize(config.column_names.size());
      std::string key = fmt::format("{:08}", sample->id);
      for (size_t f = 0; f < config.column_names.size(); ++f) {
        const std::string& name = config.column_names[f];
        if (name == "__key__") {
          key = std::string(sample->fields[f]);
          continue;
        }
        auto data = FieldBytes(config.column_encodings[f], sample->fields[f], scratch[f]);
        if (!data) return data.error().WithContext(fmt::format("{}: column '{}'", c.src, name));
        fields.emplace_back(name, *data);
        bytes += data->size();
      }
      FERRY_RETURN_IF_ERROR(writer->Write(key, fields).WithContext(c.src));
      if (output.uploader) FERRY_RETURN_IF_ERROR(output.uploader->error());
      progress.Update(++samples, bytes);
    }
    FERRY_ASSIGN_OR_RETURN(written, writer->Finish());
  } else if (c.to != "mds") {  // json, csv or tsv
    std::unique_ptr<SplitWriter> writer;
    const ShardConfig* read_as = nullptr;  // the config `fields` and `columns` were made for
    std::vector<size_t> fields;            // the writer's column k is the sample's fields[k]
    std::vector<SplitColumn> columns;      // and is read as columns[k]
    std::vector<Value> values;
    for (;;) {
      FERRY_ASSIGN_OR_RETURN(std::optional<Sample> sample, it->Next());
      if (!sample) break;
      const ShardConfig& config = *sample->config;
      if (&config != read_as) {
        std::vector<std::string> these = config.column_names;
        std::sort(these.begin(), these.end());
        if (writer && these != writer->column_names()) {
          return InvalidArgumentError(fmt::format(
              "{}: sample {} has the fields {} but the first has {}: {} needs the same columns "
              "in every sample",
              c.src, sample->id, fmt::join(these, ","), fmt::join(writer->column_names(), ","),
              c.to));
        }
        fields.clear();
        columns.clear();
        for (size_t k = 0; k < these.size(); ++k) {
          const size_t f = static_cast<size_t>(
              std::find(config.column_names.begin(), config.column_names.end(), these[k]) -
              config.column_names.begin());
          auto column = ToSplitColumn(from, config, f);
          if (!column) return column.error().WithContext(c.src);
          if (writer && column->type != writer->column_encodings()[k]) {
            return InvalidArgumentError(
                fmt::format("{}: column '{}' is {} in sample {} but {} in the first", c.src,
                            these[k], column->type, sample->id, writer->column_encodings()[k]));
          }
          fields.push_back(f);
          columns.push_back(std::move(*column));
        }
        read_as = &config;
        if (!writer) {
          SplitWriterOptions o;
          SetOutputOptions(c, output, o);
          o.format = c.to;
          for (size_t k = 0; k < these.size(); ++k)
            o.columns.emplace_back(these[k], columns[k].type);
          FERRY_ASSIGN_OR_RETURN(writer, SplitWriter::Create(std::move(o)));
        }
      }
      values.clear();
      for (size_t k = 0; k < fields.size(); ++k) {
        const std::string_view stored = sample->fields[fields[k]];
        auto value = SplitValue(columns[k], stored);
        if (!value) {
          return value.error().WithContext(fmt::format("{}: sample {} column '{}'", c.src,
                                                       sample->id, writer->column_names()[k]));
        }
        bytes += stored.size();
        values.push_back(std::move(*value));
      }
      FERRY_RETURN_IF_ERROR(
          writer->WriteValues(values).WithContext(fmt::format("{}: sample {}", c.src, sample->id)));
      if (output.uploader) FERRY_RETURN_IF_ERROR(output.uploader->error());
      progress.Update(++samples, bytes);
    }
    if (!writer) return InvalidArgumentError(fmt::format("{} holds no samples", c.src));
    FERRY_ASSIGN_OR_RETURN(written, writer->Finish());
  } else {
    std::unique_ptr<MdsWriter> writer;
    std::vector<std::string> names;  // the first sample's fields, sorted
    for (;;) {
      FERRY_ASSIGN_OR_RETURN(std::optional<Sample> sample, it->Next());
      if (!sample) break;
      const ShardConfig& config = *sample->config;
      std::vector<std::string> these = config.column_names;
      std::sort(these.begin(), these.end());
      std::map<std::string, Value, std::less<>> values;
      for (size_t f = 0; f < config.column_names.size(); ++f) {
        const std::string_view data = sample->fields[f];
        bytes += data.size();
        if (config.column_names[f] == "__key__") {
          values.emplace("__key__", Value(std::string(data)));
        } else {
          values.emplace(config.column_names[f], Value(Bytes{std::string(data)}));
        }
      }
      if (!writer) {
        names = these;
        MdsWriterOptions o;
        SetOutputOptions(c, output, o);
        for (const std::string& name : names) {
          o.columns.emplace_back(name, name == "__key__" ? "str" : "bytes");
        }
        FERRY_ASSIGN_OR_RETURN(writer, MdsWriter::Create(std::move(o)));
      } else if (these != names) {
        return InvalidArgumentError(fmt::format(
            "{}: sample {} ('{}') has the fields {} but the first has {}: MDS needs the same "
            "columns in every sample",
            c.src, sample->id,
            values.count("__key__") ? std::get<std::string>(values["__key__"]) : "",
            fmt::join(these, ","), fmt::join(names, ",")));
      }
      FERRY_RETURN_IF_ERROR(writer->Write(values));
      if (output.uploader) FERRY_RETURN_IF_ERROR(output.uploader->error());
      progress.Update(++samples, bytes);
    }
    if (!writer) return InvalidArgumentError(fmt::format("{} holds no samples", c.src));
    FERRY_ASSIGN_OR_RETURN(written, writer->Finish());
  }
  progress.Finish();
  if (output.uploader) FERRY_RETURN_IF_ERROR(output.uploader->Finish({"index.json"}));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("converted %llu samples (%s) into %zu %s shards in %.2f s: %s\n",
              static_cast<unsigned long long>(samples), from.c_str(), written.shards.size(),
              c.to.c_str(), seconds, out_name.c_str());
  return 0;
}

}  // namespace ferry::cli
