// What every writer (MDS, JSON, CSV, TSV) checks before it writes: its storage settings and the
// folder it writes a new dataset into.
//
// Thread-safety: a free function.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ferry/format/dataset_description.h"
#include "ferry/result.h"
#include "format/compression.h"

namespace ferry::internal_format {

/// Makes `out` ready for a new dataset: created if missing; refused (kAlreadyExists, in the
/// reference's words "Directory is not empty") if it holds anything, unless `exist_ok`, in
/// which case the previous dataset's files (index.json and shard.NNNNN.* of any format) are
/// removed and other files kept.
Status PrepareOutput(const std::filesystem::path& out, bool exist_ok);

/// A shard's files hold 32-bit offsets: no shard reaches this size.
inline constexpr uint64_t kMaxShardBytes = uint64_t{1} << 32;

/// Checks a writer's storage settings into `config`: `compression` (a spec, returned parsed;
/// nullopt or "" for none), `hashes` (known names, sorted), `size_limit` (0 becomes nullopt;
/// below kMaxShardBytes); then PrepareOutput(out, exist_ok). kInvalidArgument naming the setting.
Result<std::optional<Compression>> PrepareWriter(const std::optional<std::string>& compression,
                                                 const std::vector<std::string>& hashes,
                                                 std::optional<uint64_t>& size_limit,
                                                 ShardConfig& config,
                                                 const std::filesystem::path& out, bool exist_ok);

}  // namespace ferry::internal_format
