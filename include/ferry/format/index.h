// The MDS dataset index (index.json, spec §3) and the per-shard config block (§4).
//
// index.json is how an MDS dataset describes itself (ferry/format/dataset_description.h).
// ParseIndex reads it into a DatasetDescription, strictly: exactly the 11 shard keys, version 2,
// format "mds", known encodings and compression, column sizes that agree with the encodings,
// hash digests for every listed algorithm, and basenames that stay inside the dataset folder
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

#include "ferry/format/dataset_description.h"
#include "ferry/result.h"

namespace ferry {

/// Parses index.json text. `origin` (a path or URL) prefixes every error message.
/// kDataLoss for text that is not a valid index; kInvalidArgument for a well-formed index that
/// uses something unsupported (version, encoding, compression, hash) or an unsafe basename.
Result<DatasetDescription> ParseIndex(std::string_view text, std::string_view origin);

/// Parses an index.json in either form ferry streams: MDS's (ParseIndex) or a WebDataset shard
/// list (src/format/webdataset_index.h), which describes "webdataset" shards.
Result<DatasetDescription> ParseIndexFile(std::string_view text, std::string_view origin);

/// index.json exactly as the reference writer produces it (sorted keys, Python separators,
/// ASCII escapes, no trailing newline).
std::string SerializeIndex(const DatasetDescription& index);

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
