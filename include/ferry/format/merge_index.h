// Combining the indexes of sub-datasets into one (spec §10), as Mosaic's merge_index does.
//
// Each sub-index's shards are appended in order, with every non-null raw_data/zip_data basename
// prefixed by the name of the folder that directly holds that index.json ("part_a/shard..."),
// and nothing else changed. The output is {"version": 2, "shards": [...]} with keys in the
// order they were read (not sorted), Python separators and ASCII escapes - byte-identical to the
// reference's output. An existing output index.json is never overwritten (kAlreadyExists).
//
// Unlike the reference's root form, which takes every *.json below the root (and then fails on
// unrelated JSON files), MergeIndexUnder takes only files named index.json. Each sub-index is
// validated with ParseIndex first, so a broken part is reported by name before anything is
// written. MergeIndexParts does the merge on texts alone, for indexes that are not local files
// (`ferry merge-index s3://...` reads and writes them through a store).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry {

/// One sub-index to merge.
struct IndexPart {
  std::string origin;  // where it was read (a path or URL), for messages
  std::string folder;  // the name of the folder that directly holds it: its basenames' prefix
  std::string text;    // the index.json
};

struct MergedIndex {
  std::string text;  // the merged index.json
  size_t shards = 0;
};

/// Merges `parts` in order; each is validated with ParseIndex first.
Result<MergedIndex> MergeIndexParts(const std::vector<IndexPart>& parts);

/// A sub-index the root form takes: its path relative to the root ('/'-separated) and the name
/// of the folder that directly holds it.
struct SubIndex {
  std::string path;
  std::string folder;
};

/// The root form's choice among the files below a root (`files`: paths relative to it,
/// '/'-separated, in any order): those named index.json that are not directly in the root, in
/// path order. kAlreadyExists naming `root` when the root holds index.json itself (an index is
/// never overwritten); kNotFound when none is found. For MergeIndexUnder and for roots in a
/// store, which list their files otherwise.
Result<std::vector<SubIndex>> FindSubIndexes(std::vector<std::string> files, std::string_view root);

/// The list form: merges the given index.json files (duplicates dropped, first kept) into
/// `out`/index.json. Returns the number of shards written.
Result<size_t> MergeIndexFiles(const std::vector<std::filesystem::path>& index_files,
                               const std::filesystem::path& out);

/// The root form: every index.json below `root` (not directly in it), in sorted path order.
/// kNotFound when `root` does not exist, kInvalidArgument when it is not a folder.
Result<size_t> MergeIndexUnder(const std::filesystem::path& root);

}  // namespace ferry
