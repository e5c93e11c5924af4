// SplitFormat: the "json", "csv" and "tsv" ShardFormats - Mosaic Streaming's split shards, a data
// file read in place and the .meta beside it (the shard's one companion) that says where each
// sample is (src/format/split_shard.h). A sample's fields are views into the data file, in the
// shard's column order: for CSV and TSV each field's text, handed out as str, str_int or
// str_float (Mosaic's str, int and float: what Python's str(), int() and float() make of the
// text); for JSON each column's value as JSON text, handed out as json, which json.loads turns
// into what Mosaic returns.
//
// A data file or .meta whose size or sample count differs from the description is kDataLoss
// naming it. A sample is not read by range: the .meta comes first, and it is small enough that
// the whole shard costs about as much.
//
// Thread-safety: stateless.
#pragma once

#include <string>

#include "ferry/format/shard_format.h"

namespace ferry::internal_format {

class SplitFormat final : public ShardFormat {
 public:
  /// `name`: "json", "csv" or "tsv".
  explicit SplitFormat(std::string name) : name_(std::move(name)) {}

  std::string_view name() const override { return name_; }
  Result<std::unique_ptr<ShardReader>> Open(const std::filesystem::path& path,
                                            const ShardDescription& shard) const override;
  /// kInvalidArgument: a split shard is its data and its .meta, which a buffer does not hold.
  Result<std::unique_ptr<ShardReader>> FromBuffer(std::string data, const ShardDescription& shard,
                                                  std::string origin) const override;
  /// `files`: the .meta's raw contents, then the data's.
  Result<std::unique_ptr<ShardReader>> FromBuffers(std::vector<std::string> files,
                                                   const ShardDescription& shard,
                                                   std::string origin) const override;

 private:
  std::string name_;
};

}  // namespace ferry::internal_format
