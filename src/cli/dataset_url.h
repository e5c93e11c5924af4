// DatasetUrl: an MDS dataset named by a URL or a path, as `ferry inspect`, `verify`, `cat` and
// `merge-index` take it. The URL goes through the registry (so "s3:/x" is an error, not a local
// folder), index.json is read through the store, and for a store that is not local the commands
// fetch the shard files they need into a ScratchFolder (scratch_folder.h) and run the local readers
// and checks (LocalDataset, VerifyDataset) on them unchanged.
//
// Thread-safety: a DatasetUrl is immutable after Open and its methods may be called
// concurrently (the store allows it).
#pragma once

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
  /// `url` (a URL or a path) and, when not empty, its sub-folder `split`. Nothing is read yet.
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

  /// index.json's text. kNotFound "NAME does not exist" when nothing is at the folder;
  /// kInvalidArgument "NAME is not an MDS dataset" when the folder holds no index.json, or one
  /// that lists WebDataset tars (saying which commands read those).
  Result<std::string> ReadIndexText() const;
  /// ReadIndexText, parsed.
  Result<DatasetDescription> ReadIndex() const;

  /// Which of `basenames` are in the folder: one listing per distinct sub-folder among them
  /// (merged datasets name "part/shard..."), not one request per file - except in a store that
  /// cannot list (http), which gets one HEAD per file.
  Result<std::set<std::string>> Present(const std::vector<std::string>& basenames) const;

 private:
  StoreAndKey where_;
  std::optional<std::filesystem::path> local_;
  std::string name_;
};

/// The files of `entry` that a reader needs, in the order to fetch them: for each of its files
/// (a companion such as a .meta, then the data), the compressed form (smaller) when the index
/// lists one, then the raw form.
std::vector<std::string> ShardFiles(const ShardDescription& entry);

}  // namespace ferry::cli
