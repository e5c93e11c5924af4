// Listing a folder of files for `ferry convert` - a local folder, or a prefix in any store -
// with torchvision ImageFolder's conventions:
// every non-hidden sub-folder of the root is a class (sorted by name, index = position), and
// its files, found recursively, are that class's samples. A root without sub-folders is a plain
// folder of files, without labels. Hidden files and folders (leading '.') are skipped. Files
// are ordered by class, then by relative path, so the same folder always converts to the same
// dataset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry {

struct FolderFile {
  std::filesystem::path path;  // absolute or as given (remote: the relative path again)
  std::string relative;        // '/'-separated, relative to the root
  int64_t label = -1;          // class index; -1 in a plain folder
  uint64_t bytes = 0;
};

struct FolderListing {
  bool labeled = false;              // ImageFolder layout (class sub-folders)
  std::vector<std::string> classes;  // sorted class names
  std::vector<FolderFile> files;
  uint64_t total_bytes = 0;
  size_t skipped_top_level = 0;  // files directly in the root of an ImageFolder (ignored)
};

/// kNotFound when `root` does not exist; kInvalidArgument when it is not a folder, holds no
/// files, or a file name is not UTF-8.
Result<FolderListing> ListImageFolder(const std::filesystem::path& root);

/// The same rules over the objects under `prefix` in `store` (`url` names it in errors). Keys
/// that are not safe relative paths ("..", absolute) are refused.
Result<FolderListing> ListRemoteImageFolder(ObjectStore& store, std::string_view prefix,
                                            std::string_view url);

/// Removes the files at `indexes` (ascending) from `listing`, keeping the order of the rest and
/// total_bytes right. Classes stay: the labels of the files kept do not change.
void RemoveFiles(FolderListing& listing, const std::vector<size_t>& indexes);

}  // namespace ferry
