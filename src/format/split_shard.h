// SplitShard: one shard of Mosaic Streaming's JSON, CSV or TSV formats, "split" because its
// samples are in a data file and their offsets in a .meta file beside it:
//   meta  uint32 sample count n, uint32 offsets[n + 1] into the data file (little-endian), then
//         the shard's config as JSON (not needed: index.json has it);
//   data  csv/tsv: a header line of the column names, then each sample's text and `newline`;
//         json: each sample's JSON object and `newline`.
// A sample decodes as Mosaic's readers decode it: json is the parsed object; csv/tsv splits the
// line at ',' or '\t' and decodes each part by its column's encoding (str as is, int, float).
// Offsets out of order or past the data, a line without its newline, a wrong number of fields or
// a value its encoding refuses are kDataLoss naming the shard and the sample.
//
// Thread-safety: an immutable value.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/format/dataset_description.h"
#include "ferry/format/encoding.h"
#include "ferry/result.h"

namespace ferry::internal_format {

struct SplitShardConfig {
  std::string format;  // "json", "csv" or "tsv"
  // csv/tsv: the columns in order, with their encodings ("str", "int", "float").
  std::vector<std::string> column_names;
  std::vector<std::string> column_encodings;
  std::string newline = "\n";
};

/// How ferry hands out a field that a split shard of `format` stores with Mosaic's `encoding`
/// ("str", "int", "float"): json for every JSON value; str, str_int or str_float for CSV and
/// TSV text. kInvalidArgument for another encoding.
Result<ColumnEncoding> SplitFieldEncoding(std::string_view format, std::string_view encoding);

/// Mosaic's get_config() of the writer of a `format` shard with `config`: what its .meta ends
/// with and its index.json entry holds besides its files and sample count.
nlohmann::ordered_json SplitConfigJson(std::string_view format, const ShardConfig& config);

class SplitShard {
 public:
  /// `data` and `meta` are the shard's two (decompressed) files; `name` is for errors.
  static Result<SplitShard> Open(std::string data, std::string meta, SplitShardConfig config,
                                 std::string name);
  /// As Open, over bytes that `owner` keeps alive (a mapped file); `meta` is read only here.
  static Result<SplitShard> Open(std::string_view data, std::string_view meta,
                                 std::shared_ptr<const void> owner, SplitShardConfig config,
                                 std::string name);

  uint32_t num_samples() const { return static_cast<uint32_t>(offsets_.size() - 1); }
  const SplitShardConfig& config() const { return config_; }
  /// Sample `i`'s text, without its newline.
  Result<std::string_view> Text(uint32_t i) const;
  /// Sample `i`'s fields in column order, as views into the data: for CSV and TSV the text of
  /// each field; for JSON the JSON text of each column's value (a JSON shard names its columns
  /// in the index; a sample without one of them, or with a key that is not one, is kDataLoss).
  Status Fields(uint32_t i, std::vector<std::string_view>& out) const;
  /// Sample `i` as Mosaic returns it: an object of column name to value.
  Result<nlohmann::json> Decode(uint32_t i) const;

 private:
  SplitShard() = default;
  Status SampleError(uint32_t i, std::string_view what) const;

  std::shared_ptr<const void> owner_;
  std::string_view data_;
  std::vector<uint32_t> offsets_;
  SplitShardConfig config_;
  std::string name_;
};

}  // namespace ferry::internal_format
