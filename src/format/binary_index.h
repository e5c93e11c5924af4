// The binary form of a DatasetDescription that a cache folder keeps beside its index.json
// (.ferry/index.bin, src/cache/cached_index.h).
//
// An index of 100,000 shards is some 34 MB of JSON that takes most of a second and a few hundred
// MB of heap to parse; every rank and DataLoader worker on a node opens it. The binary form is
// made once per node, from the parsed description, and read by every other process in a few
// milliseconds without a JSON document: strings are length-prefixed, integers LEB128, and the
// settings shards share (their ShardConfig, their format name) are stored once and referred to
// by number.
//
//   offset  size  field
//        0     8  magic "FERRYIX1"
//        8     8  bytes of the index.json it was made from
//       16     8  xxh3_64 of that index.json
//       24     8  bytes of the body
//       32     8  xxh3_64 of the body
//       40     -  body: configs, format names, shards (binary_index.cc)
//
// It is a cache of the JSON, never the truth: made from other JSON bytes (the source fields
// differ), truncated or damaged (a power cut: the cache does not fsync), or written by another
// layout (another magic), it does not decode, and the reader parses index.json again.
//
// Thread-safety: free functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "ferry/format/dataset_description.h"
#include "ferry/result.h"

namespace ferry::internal_format {

/// What a binary index was made from: the bytes and digest of an index.json.
struct BinaryIndexSource {
  uint64_t bytes = 0;
  uint64_t xxh3 = 0;
  friend bool operator==(const BinaryIndexSource&, const BinaryIndexSource&) = default;
};

BinaryIndexSource DescribeIndexSource(std::string_view index_json);
/// The same of the file at `path`, read in pieces: a process that then finds the binary form
/// never holds the JSON in memory.
Result<BinaryIndexSource> DescribeIndexFile(const std::filesystem::path& path);

/// The binary form of `description`, parsed from the index.json that `source` describes.
std::string EncodeBinaryIndex(const DatasetDescription& description,
                              const BinaryIndexSource& source);

/// The description in `bytes`. kFailedPrecondition when it was made from another index.json
/// than `source`; kDataLoss, naming `origin`, when it is not a whole binary index of this
/// layout.
Result<DatasetDescription> DecodeBinaryIndex(std::string_view bytes,
                                             const BinaryIndexSource& source,
                                             std::string_view origin);

}  // namespace ferry::internal_format
