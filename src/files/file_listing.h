// FileListing: the files of a FileDataset's root, listed once and kept in the cache folder.
//
// ListFiles lists the root recursively and keeps objects whose name ends in one of the
// extensions (case-insensitive; all without extensions), sorted by path. Keys ending in '/'
// (the "folder" markers some consoles create) are not files. Every path must be a safe relative
// name (no "..", not absolute, not inside ferry's .ferry/ folder): a listing with a hostile key
// is rejected naming it, so nothing is ever written outside the cache folder. With folder
// labels, the classes are the sorted first folders under the root and a file's label is its
// folder's rank; files directly under the root have no class and are left out (as torchvision's
// ImageFolder does), and the count left out is logged. A root holding an MDS dataset (index.json
// beside shard.*.mds files, in any folder) is kInvalidArgument: StreamingDataset reads it.
//
// The stored form (<local>/.ferry/listing.json) records what the listing is of (root, label
// mode, extensions) so that a listing of another root or made with other filters is never
// reused, and when it was made, for listing_max_age.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/files/file_dataset.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry::internal_files {

struct Listing {
  std::string root;  // the root URL, redacted
  FileLabels labels = FileLabels::kFolder;
  std::vector<std::string> extensions;  // normalized: lower case, with the dot, sorted
  int64_t listed_at_s = 0;              // Unix time
  std::vector<std::string> classes;
  std::vector<FileEntry> files;  // sorted by path
};

/// Lower case, with a leading dot, sorted, without duplicates. kInvalidArgument for an empty one.
Result<std::vector<std::string>> NormalizeExtensions(const std::vector<std::string>& extensions);

/// True when `path` ends in one of `extensions` (NormalizeExtensions' form), ignoring case; true
/// for every path when `extensions` is empty.
bool HasExtension(std::string_view path, const std::vector<std::string>& extensions);

/// True for the name of an MDS shard file: shard.00000.mds, shard.00000.mds.zstd, ...
bool IsMdsShardName(std::string_view name);

/// Lists `prefix` (the root's key; "" for the store's root) of `store`. `root_url` names the
/// root in errors and in the result.
Result<Listing> ListFiles(ObjectStore& store, std::string_view prefix, std::string root_url,
                          FileLabels labels, std::vector<std::string> extensions);

std::string SerializeListing(const Listing& listing);
/// kDataLoss naming `origin` for text that is not a listing.
Result<Listing> ParseListing(std::string_view text, std::string_view origin);

/// True when `stored` lists the same root with the same filters as asked for.
bool SameQuery(const Listing& stored, std::string_view root_url, FileLabels labels,
               const std::vector<std::string>& extensions);

/// Paths of `before` that `after` no longer has, or has with another size or etag.
std::vector<std::string> ChangedFiles(const Listing& before, const Listing& after);

}  // namespace ferry::internal_files
