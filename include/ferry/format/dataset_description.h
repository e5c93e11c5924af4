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
  /// Mosaic's JSON/CSV/TSV shards: what ends every sample, and each column's encoding as
  /// index.json names it ("str", "int", "float"; column_encodings says how ferry hands the field
  /// out: str, str_int and str_float for CSV and TSV, json for a JSON shard's values). Empty for
  /// the other formats.
  std::string newline;
  std::vector<std::string> split_encodings;

  /// Index of a column by name, or nullopt.
  std::optional<size_t> ColumnIndex(std::string_view name) const;
  /// True when some column uses an unsafe encoding (pkl).
  bool HasUnsafeColumn() const;
  friend bool operator==(const ShardConfig&, const ShardConfig&) = default;
};

/// A file read together with a shard's raw_data (the .meta of a Mosaic JSON/CSV/TSV shard),
/// stored compressed exactly when raw_data is.
struct CompanionFile {
  FileInfo raw;
  std::optional<FileInfo> zip;
  friend bool operator==(const CompanionFile&, const CompanionFile&) = default;
};

/// One file of a shard as stored: the raw form a reader opens, and the compressed form fetched
/// in its place when there is one.
struct ShardFile {
  const FileInfo* raw = nullptr;
  const FileInfo* zip = nullptr;  // null when the file is stored raw
};

struct ShardDescription {
  std::shared_ptr<const ShardConfig> config;  // never null
  FileInfo raw_data;                          // the file a reader opens (local name = remote name)
  std::optional<FileInfo> zip_data;           // set exactly when config->compression is
  /// Fetched, kept and evicted with raw_data; a reader opens them beside it.
  std::vector<CompanionFile> companions;
  uint64_t samples = 0;
  /// The ShardFormat that reads raw_data ("mds", "webdataset", "json", "csv", "tsv"), or "file"
  /// for a file of a FileDataset, which reads it whole.
  std::string format = "mds";

  /// The companions, then raw_data: raw_data is published last and removed first, so that a
  /// complete raw_data means a complete shard.
  std::vector<ShardFile> files() const;
  /// Every form of every file: each raw file and, where there is one, its compressed form.
  std::vector<const FileInfo*> all_forms() const;
  /// The raw bytes of every file (what a local copy holds without its compressed forms).
  uint64_t raw_bytes() const;
  /// The bytes fetched: each file's compressed form where it has one, else its raw form.
  uint64_t stored_bytes() const;

  /// Equal fields, the configs compared by value.
  friend bool operator==(const ShardDescription& a, const ShardDescription& b);
};

struct DatasetDescription {
  std::vector<ShardDescription> shards;

  uint64_t num_samples() const;
  friend bool operator==(const DatasetDescription&, const DatasetDescription&) = default;
};

}  // namespace ferry
