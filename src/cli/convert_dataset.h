// `ferry convert` between shard formats: a dataset (an MDS dataset, or WebDataset tars listed by
// `ferry index`) read in order through StreamingDataset - in place when local, through a scratch
// cache when in a store - and written as MDS or as WebDataset tars into a local folder or, staged
// and uploaded shard by shard, into a store.
//
//   MDS -> WebDataset: a sample's key is its `__key__` column when it has one (a str), else its
//     index, zero-padded to 8 digits; each other column is a field of the same name holding its
//     stored bytes for bytes, str, json, jpeg, png and the text-number encodings, and its value as
//     decimal text for the numeric ones (as WebDataset's `cls` fields hold class indexes). Other
//     encodings (ndarray, pil, image lists, pkl) have no file form: an error naming the column.
//   WebDataset -> MDS: a column per field of the first sample (every sample must have the same
//     fields: an error naming the first that differs), all bytes, and `__key__` as a str column.
//   A format into itself is a copy re-sharded by --size-limit.
//
// Thread-safety: a free function run by the CLI's one thread (the writers use their own).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/registry.h"

namespace ferry::cli {

struct DatasetConversion {
  std::string src;
  std::string out;
  std::string to = "mds";  // "mds" or "webdataset"
  std::optional<uint64_t> size_limit;
  std::optional<std::string> compression;  // MDS only
  std::vector<std::string> hashes;         // MDS only
  bool overwrite = false;
  bool quiet = false;
};

/// True when `src` is a dataset ferry streams (an index.json at its root) rather than a folder
/// of files.
Result<bool> IsDatasetSource(const StoreAndKey& src);

Result<int> ConvertDataset(const DatasetConversion& conversion);

}  // namespace ferry::cli
