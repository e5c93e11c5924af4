// LocalDataset: a dataset in a local folder, read in place, whatever its shards' format (MDS,
// WebDataset, Mosaic's JSON/CSV/TSV: each read through its ShardFormat).
//
// Opens <root>[/<split>]/index.json, then opens shards on first use: raw shard files are
// memory-mapped; a shard whose files are present only in compressed form is decompressed into
// memory (never written next to the dataset, which may be read-only). With `validate_hash`,
// each file that is read (raw if present, else compressed) is checked against that digest in
// the index first.
// Datasets with an unsafe (pkl) column are refused unless `allow_unsafe_types`.
//
// Shard readers are kept in a small LRU (`max_open_shards`); a reader handed out stays valid
// for as long as the caller holds it.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/format/index.h"
#include "ferry/format/shard_reader.h"
#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry {

/// Reads and parses `folder`/index.json (MDS, split, or a WebDataset shard list; ParseIndexFile's
/// errors). A folder without index.json that holds WebDataset tars is their shard list, each
/// counted in place on every call (`ferry index` writes the list once); with neither it is
/// kInvalidArgument naming the folder (it is not a dataset), and kNotFound when it does not exist.
Result<DatasetDescription> ReadLocalIndex(const std::filesystem::path& folder);

struct LocalDatasetOptions {
  std::string split;                         // optional sub-folder of the root
  bool allow_unsafe_types = false;           // accept pkl columns (read as raw bytes)
  std::optional<std::string> validate_hash;  // e.g. "sha1": check each shard file first
  size_t max_open_shards = 64;
};

class LocalDataset {
 public:
  /// kInvalidArgument when the folder holds no index.json or uses unsupported features;
  /// kDataLoss when index.json is malformed.
  static Result<std::unique_ptr<LocalDataset>> Open(const std::filesystem::path& root,
                                                    LocalDatasetOptions options = {});
  ~LocalDataset();

  const DatasetDescription& index() const { return index_; }
  /// The folder that holds index.json.
  const std::filesystem::path& folder() const { return folder_; }
  uint64_t num_samples() const { return num_samples_; }

  /// (shard, sample within shard) of global sample `i`. kOutOfRange past the end.
  Result<std::pair<size_t, uint32_t>> Locate(uint64_t i) const;

  /// The validated reader of shard `k`, opened (and decompressed) on first use.
  Result<std::shared_ptr<const ShardReader>> Shard(size_t k) const;

  /// Decoded values of global sample `i`, in column order.
  Result<std::vector<Value>> Get(uint64_t i) const;

 private:
  struct RecentReaders;  // the LRU of open shard readers, behind its own lock

  LocalDataset();
  Result<std::shared_ptr<const ShardReader>> OpenShard(size_t k) const;

  std::filesystem::path folder_;
  LocalDatasetOptions options_;
  DatasetDescription index_;
  uint64_t num_samples_ = 0;
  std::vector<uint64_t> shard_starts_;  // prefix sums of samples, one per shard

  const std::unique_ptr<RecentReaders> recent_;
};

}  // namespace ferry
