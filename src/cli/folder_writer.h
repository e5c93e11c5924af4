// What `ferry convert` writes a folder of files (or an ImageFolder) into, file by file in the
// listing's order:
//   MDS: a sample per file, the columns `data` (the file's bytes, in the encoding decided for all
//     the files), `label` (int) and `path` (str) that were asked for.
//   WebDataset: a sample per key, as WebDataset groups a tar's members: a file's key is its
//     relative path up to the first dot of its name, and the rest, lower-cased, is the field
//     holding its bytes ("cat/001.jpg" is key "cat/001", field "jpg"); consecutive files of one
//     key ("001.jpg", "001.json") are one sample. With labels, each sample has a `cls` field, its
//     class index as decimal text, as WebDataset's ImageNet shards hold it. The key is the path,
//     so there is no path field. A file without an extension is kInvalidArgument naming it.
//
// Thread-safety: one thread per writer (the MDS writer's own threads are behind it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/image_folder.h"
#include "ferry/format/dataset_description.h"
#include "ferry/result.h"

namespace ferry::cli {

struct FolderWriterOptions {
  std::string to = "mds";  // "mds" or "webdataset"
  std::filesystem::path out;
  bool with_data = true;
  bool with_label = false;
  bool with_path = false;                  // MDS only: WebDataset keys are the paths
  std::string encoding;                    // of the MDS data column: jpeg, png or bytes
  std::optional<std::string> compression;  // MDS only
  std::vector<std::string> hashes;         // MDS only
  std::optional<uint64_t> size_limit;
  bool exist_ok = false;
  std::function<void(const std::string&)> on_shard_written;
};

class FolderWriter {
 public:
  static Result<std::unique_ptr<FolderWriter>> Create(FolderWriterOptions options);
  virtual ~FolderWriter() = default;

  /// Writes `file`, whose bytes are `data` (empty without a data column).
  virtual Status Write(const FolderFile& file, std::string data) = 0;

  /// Closes the last shard and writes index.json; the description of what was written.
  virtual Result<DatasetDescription> Finish() = 0;
};

}  // namespace ferry::cli
