// `ferry convert` between shard formats: a dataset (MDS, Mosaic's JSON, CSV or TSV, or WebDataset
// tars: a folder of them, listed or not, or a shard pattern) read in order through
// StreamingDataset - in place when local, through a scratch cache when in a store or named by a
// pattern - and written as MDS, WebDataset tars, JSON, CSV or TSV into a local folder or, staged
// and uploaded shard by shard, into a store.
//
//   MDS -> WebDataset: a sample's key is its `__key__` column when it has one (a str), else its
//     index, zero-padded to 8 digits; each other column is a field of the same name holding its
//     stored bytes for bytes, str, json, jpeg, png and the text-number encodings, and its value as
//     decimal text for the numeric ones (as WebDataset's `cls` fields hold class indexes). Other
//     encodings (ndarray, pil, image lists, pkl) have no file form: an error naming the column.
//   WebDataset -> MDS: a column per field of the first sample (every sample must have the same
//     fields: an error naming the first that differs), all bytes, and `__key__` as a str column.
//   Into Mosaic's JSON, CSV or TSV (SplitWriter), which hold only str, int and float columns: an
//     MDS column of str, of an int or of a float encoding (binary or text) keeps its type; a
//     WebDataset field takes the type WebDataset's decoders give it (txt, text, transcript and
//     __key__ are str; cls, cls2, index, inx and id are int); a JSON, CSV or TSV column keeps its
//     own. Any other column (bytes, images, arrays) is an error naming it, before anything is
//     written; so is a CSV or TSV str holding the separator or a newline, naming the sample.
//   A format into itself (but MDS, which `ferry cp` copies) is a copy re-sharded by --size-limit.
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
  std::string to = "mds";  // "mds", "webdataset", "json", "csv" or "tsv"
  std::optional<uint64_t> size_limit;
  std::optional<std::string> compression;  // MDS, JSON, CSV and TSV
  std::vector<std::string> hashes;         // MDS, JSON, CSV and TSV
  bool overwrite = false;
  bool quiet = false;
};

/// True when `src` (the URL `url`) is a dataset ferry streams rather than a folder of files: a
/// shard pattern, a folder with an index.json, or one with WebDataset tars directly in it.
Result<bool> IsDatasetSource(std::string_view url);

Result<int> ConvertDataset(const DatasetConversion& conversion);

}  // namespace ferry::cli
