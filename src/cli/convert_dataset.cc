#include "cli/convert_dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "base/python_float.h"
#include "cli/dataset_uploader.h"
#include "cli/progress.h"
#include "cli/scratch_folder.h"
#include "ferry/format/encoding.h"
#include "ferry/format/mds_writer.h"
#include "ferry/stream/streaming_dataset.h"
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

}  // namespace

Result<bool> IsDatasetSource(const StoreAndKey& src) {
  auto head = src.store->Head(JoinKey(src.key, "index.json"));
  if (head) return true;
  if (head.error().code() == StatusCode::kNotFound) return false;
  return head.error();
}

Result<int> ConvertDataset(const DatasetConversion& c) {
  const auto started = std::chrono::steady_clock::now();
  if (c.to != "mds" && c.to != "webdataset") {
    return InvalidArgumentError(fmt::format("--to {}: mds or webdataset", c.to));
  }
  FERRY_ASSIGN_OR_RETURN(const StoreAndKey src, OpenUrl(c.src));
  FERRY_ASSIGN_OR_RETURN(const StoreAndKey out, OpenUrl(c.out));
  const std::string out_name = out.store->LocalPath(out.key) ? c.out : http::RedactUrl(c.out);

  // The source, read in order: in place when local, through a scratch cache from a store.
  std::unique_ptr<ScratchFolder> cache;
  StreamingOptions options;
  StreamSpec spec;
  if (auto local = src.store->LocalPath(src.key)) {
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
  const std::string from = ds->indexes().front().shards.front().format;
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
        o.out = output.folder;
        for (const std::string& name : names) {
          o.columns.emplace_back(name, name == "__key__" ? "str" : "bytes");
        }
        o.compression = c.compression;
        o.hashes = c.hashes;
        o.size_limit = c.size_limit;
        o.exist_ok = c.overwrite || output.staging != nullptr;
        if (output.on_shard_written) o.on_shard_written = output.on_shard_written;
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
