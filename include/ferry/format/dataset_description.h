// DatasetDescription: what the cache, order and stream layers know of a dataset, whatever its
// shard format: its shards in dataset order, each with the files to fetch (remote names, sizes,
// hashes), its compression, its sample count and the format that reads it. The global sample
// order is shard order, then sample order within a shard.
//
// Where a description comes from is the format's business: an MDS dataset's from its
// index.json (ferry/format/index.h), a FileDataset's from the listing of its folder (a shard per
// file). The layers above format/ read a shard only through the ShardFormat its `format` names
// (ferry/format/shard_format.h).
//
// Thread-safety: values; a ShardConfig is shared read-only between the shards of one writer run.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/format/encoding.h"

namespace ferry {

/// One file of a shard: the raw shard or its compressed form.
struct FileInfo {
  std::string basename;  // relative to the folder the description was read from
  uint64_t bytes = 0;
  std::vector<std::pair<std::string, std::string>> hashes;  // algorithm -> lowercase hex

  /// The digest for `algorithm`, or nullptr.
  const std::string* FindHash(std::string_view algorithm) const;
  friend bool operator==(const FileInfo&, const FileInfo&) = default;
};

/// The settings every shard of one writer run shares: the columns a sample has (empty for a
/// format whose samples name their own fields) and how the files are stored. For MDS these are
/// the eight keys of index.json that each shard file embeds too.
struct ShardConfig {
  std::vector<std::string> column_names;         // MDS: sorted by code point
  std::vector<ColumnEncoding> column_encodings;  // parallel to column_names
  std::vector<std::optional<uint32_t>> column_sizes;
  std::optional<std::string> compression;  // verbatim spec, e.g. "zstd:7"
  std::vector<std::string> hashes;         // algorithm names, sorted
  std::optional<uint64_t> size_limit;      // bytes; nullopt = no limit

  /// Index of a column by name, or nullopt.
  std::optional<size_t> ColumnIndex(std::string_view name) const;
  /// True when some column uses an unsafe encoding (pkl).
  bool HasUnsafeColumn() const;
  friend bool operator==(const ShardConfig&, const ShardConfig&) = default;
};

struct ShardDescription {
  std::shared_ptr<const ShardConfig> config;  // never null
  FileInfo raw_data;                          // the file a reader opens (local name = remote name)
  std::optional<FileInfo> zip_data;           // set exactly when config->compression is
  uint64_t samples = 0;
  /// The ShardFormat that reads raw_data ("mds"), or "file" for a file of a FileDataset, which
  /// reads it whole.
  std::string format = "mds";
};

struct DatasetDescription {
  std::vector<ShardDescription> shards;

  uint64_t num_samples() const;
};

}  // namespace ferry
