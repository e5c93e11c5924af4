// DatasetUrl: a dataset named by a URL or a path, as `ferry inspect`, `verify`, `cat`, `index` and
// `merge-index` take it. The URL goes through the registry (so "s3:/x" is an error, not a local
// folder), index.json is read through the store, and for a store that is not local the commands
// fetch the shard files they need into a ScratchFolder (scratch_folder.h) and run the local readers
// and checks (LocalDataset, VerifyDataset) on them unchanged.
//
// WebDataset tars need no index.json: a folder of tars without one, or a shard pattern naming
// some of a folder's tars ("s3://b/train-{000000..000127}.tar", src/format/shard_pattern.h), is
// described by reading each tar once (DescribeTars). A pattern is read as a store is, through
// scratch copies, even when local: its folder may hold other tars and another index.json.
//
// Thread-safety: a DatasetUrl is immutable after Open and its methods may be called
// concurrently (the store allows it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/format/index.h"
#include "ferry/result.h"
#include "ferry/storage/registry.h"

namespace ferry::cli {

class DatasetUrl {
 public:
  /// `url` (a URL, a path or a shard pattern) and, when not empty, its sub-folder `split` (not
  /// with a pattern). Nothing is read yet.
  static Result<DatasetUrl> Open(std::string_view url, std::string_view split = "");

  ObjectStore& store() const { return *where_.store; }
  /// The folder's key in the store: "" (the store's root) or ending in '/'.
  const std::string& prefix() const { return where_.key; }
  /// The folder on the local filesystem, for a local store; nullopt for remote ones.
  const std::optional<std::filesystem::path>& local() const { return local_; }
  /// The folder as the user named it (redacted), for messages.
  const std::string& name() const { return name_; }
  /// The URL of `basename` in the folder (redacted), for messages.
  std::string UrlOf(std::string_view basename) const;

  /// index.json's text; for a pattern, or a folder of tars without index.json, the shard list
  /// DescribeTars makes (a note on stderr says so). kNotFound "NAME does not exist" when nothing
  /// is at the folder; kInvalidArgument "NAME is not a dataset" when it holds neither.
  Result<std::string> ReadIndexText() const;
  /// ReadIndexText, parsed.
  Result<DatasetDescription> ReadIndex() const;

  /// The shard list of the pattern's tars, or of every tar in the folder (kNotFound when it holds
  /// none), each read once, `jobs` at a time: in place when local, else downloaded into a scratch
  /// folder and deleted once counted. A tar that streaming would refuse fails here, named.
  Result<DatasetDescription> DescribeTars(uint32_t jobs) const;
  /// True when the URL was a shard pattern.
  bool is_pattern() const { return !tar_names_.empty(); }

  /// Which of `basenames` are in the folder: one listing per distinct sub-folder among them
  /// (merged datasets name "part/shard..."), not one request per file - except in a store that
  /// cannot list (http), which gets one HEAD per file.
  Result<std::set<std::string>> Present(const std::vector<std::string>& basenames) const;

 private:
  StoreAndKey where_;
  std::optional<std::filesystem::path> local_;
  std::string name_;
  std::vector<std::string> tar_names_;  // a pattern's, in its order
};

/// The files of `entry` that a reader needs, in the order to fetch them: for each of its files
/// (a companion such as a .meta, then the data), the compressed form (smaller) when the index
/// lists one, then the raw form.
std::vector<std::string> ShardFiles(const ShardDescription& entry);

}  // namespace ferry::cli
