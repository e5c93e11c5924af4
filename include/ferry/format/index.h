// The MDS dataset index (index.json, spec §3) and the per-shard config block (§4).
//
// An Index lists shards in dataset order; the global sample order is shard order, then sample
// order within a shard. ParseIndex is strict: exactly the 11 shard keys, version 2, format
// "mds", known encodings and compression, column sizes that agree with the encodings, hash
// digests for every listed algorithm, and basenames that stay inside the dataset folder
// (relative, no "..", no empty or "." components). A violation names the origin (file or URL),
// the shard and the field.
//
// Thread-safety: values; ShardConfig is shared read-only between shards written by one writer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/format/encoding.h"
#include "ferry/result.h"

namespace ferry {

/// One file of a shard: the raw shard or its compressed form.
struct FileInfo {
  std::string basename;  // relative to the folder that holds index.json
  uint64_t bytes = 0;
  std::vector<std::pair<std::string, std::string>> hashes;  // algorithm -> lowercase hex

  /// The digest for `algorithm`, or nullptr.
  const std::string* FindHash(std::string_view algorithm) const;
  friend bool operator==(const FileInfo&, const FileInfo&) = default;
};

/// The eight keys every shard of one writer run shares, also embedded in each shard file.
struct ShardConfig {
  std::vector<std::string> column_names;         // sorted by code point
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

struct ShardEntry {
  std::shared_ptr<const ShardConfig> config;
  FileInfo raw_data;
  std::optional<FileInfo> zip_data;  // set exactly when config->compression is
  uint64_t samples = 0;
};

struct Index {
  std::vector<ShardEntry> shards;

  uint64_t num_samples() const;
};

/// Parses index.json text. `origin` (a path or URL) prefixes every error message.
/// kDataLoss for text that is not a valid index; kInvalidArgument for a well-formed index that
/// uses something unsupported (version, encoding, compression, hash) or an unsafe basename.
Result<Index> ParseIndex(std::string_view text, std::string_view origin);

/// index.json exactly as the reference writer produces it (sorted keys, Python separators,
/// ASCII escapes, no trailing newline).
std::string SerializeIndex(const Index& index);

/// The shard's config block exactly as the reference writer embeds it.
std::string SerializeShardConfig(const ShardConfig& config);

/// Parses an embedded config block (for checking it against the index). kDataLoss if malformed.
Result<ShardConfig> ParseShardConfig(std::string_view text);

/// A basename that stays inside the dataset folder: relative, '/'-separated, no empty, "." or
/// ".." component, no backslash or NUL. kInvalidArgument otherwise.
Status ValidateBasename(std::string_view basename);

/// "shard.00042.mds" (at least 5 digits).
std::string RawShardBasename(uint64_t ordinal);

}  // namespace ferry
