// SplitWriter: writes Mosaic Streaming's JSON, CSV and TSV datasets - what Mosaic's JSONWriter,
// CSVWriter and TSVWriter write, byte for byte, so that Mosaic and ferry read them alike.
//
// A shard is a data file and a .meta (u32 sample count, u32 offsets into the data, then the
// shard's config as JSON), compressed each when `compression` is set. Columns are sorted by
// name. A JSON sample is its object as Python's json.dumps(sort_keys=True) writes it; a CSV or
// TSV shard starts with a header line of the column names, and a sample is each value's Python
// str() joined by ',' or '\t'. A sample ends with `newline`. A shard is flushed before a sample
// would take it past size_limit (counting the samples' bytes only, as the reference does).
//
// Values: a str column takes a std::string (valid UTF-8; in CSV and TSV without the separator
// or the newline, which would split it), an int column an int64_t or uint64_t, a float column
// a double. Anything else is kInvalidArgument naming the column, and nothing is written.
//
// Shards are written synchronously (temporary name, rename); Finish writes index.json last, so
// a crashed run leaves no index that lists a missing shard.
//
// Thread-safety: one writer is used by one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferry/format/dataset_description.h"
#include "ferry/format/mds_writer.h"
#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry {

struct SplitWriterOptions {
  std::filesystem::path out;  // local folder; created if missing
  std::string format;         // "json", "csv" or "tsv"
  /// Column name -> "str", "int" or "float", in any order (stored sorted).
  std::vector<std::pair<std::string, std::string>> columns;
  std::string newline = "\n";
  std::optional<std::string> compression;                  // "zstd", "gz", ... ; nullopt = none
  std::vector<std::string> hashes;                         // sorted names, e.g. {"sha1"}
  std::optional<uint64_t> size_limit = kDefaultSizeLimit;  // nullopt (or 0) = one shard
  /// Replace an existing dataset in `out`; otherwise a non-empty `out` is kAlreadyExists.
  bool exist_ok = false;
  /// Called with the basename of each shard file once it is complete under its final name (not
  /// index.json), as MdsWriterOptions::on_shard_written.
  std::function<void(const std::string& basename)> on_shard_written;
};

class SplitWriter {
 public:
  /// Validates the options (format, encodings, newline, compression, hashes, size_limit) and
  /// prepares `out`.
  static Result<std::unique_ptr<SplitWriter>> Create(SplitWriterOptions options);
  ~SplitWriter();
  SplitWriter(const SplitWriter&) = delete;
  SplitWriter& operator=(const SplitWriter&) = delete;

  /// The stored (sorted) column order that WriteValues expects values in.
  const std::vector<std::string>& column_names() const;
  /// Their encodings ("str", "int", "float"), in that order.
  const std::vector<std::string>& column_encodings() const;
  /// The config every shard's .meta ends with: Python's JSON text of Mosaic's get_config().
  std::string config_json() const;

  /// Appends one sample; `values` are in column_names() order.
  Status WriteValues(std::span<const Value> values);
  /// Ends the shard being built now. A shard that holds no sample yet is left open.
  /// kFailedPrecondition after Finish.
  Status FlushShard();
  /// Flushes the last shard and writes index.json; returns the index written.
  Result<DatasetDescription> Finish();
  uint64_t samples_written() const;

 private:
  class Impl;
  explicit SplitWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry
