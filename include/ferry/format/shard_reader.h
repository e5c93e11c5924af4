// ShardReader: the samples of one local shard, whatever its format - what the stream layer reads
// a sample through. A format's reader validates its file once, when it is opened, so that no
// later read can go outside it; each sample comes as views of its fields into the shard's bytes,
// with the ShardConfig that names them and says how each is encoded.
//
// A format whose samples all have the same columns (MDS, Mosaic's JSON/CSV/TSV) names them in
// the shard's config; one whose samples name their own fields (WebDataset) gives a config per
// set of names, owned by the reader.
//
// Thread-safety: immutable once opened; any number of threads may read concurrently. Views and
// configs stay valid while the reader (or the owner() it hands out) is alive.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/format/dataset_description.h"
#include "ferry/result.h"

namespace ferry {

/// A shard read from its file as stored, mapped whole: every view its reader hands out lies in
/// `bytes`, so a field can be named by where it lies in the file (path, inode, offset) instead
/// of by its bytes - how samples cross to another process on the node (Python's DataLoader
/// workers hand them over so).
struct MappedShardFile {
  std::filesystem::path path;
  uint64_t inode = 0;
  std::string_view bytes;
};

/// One sample's fields as views into bytes that `owner` keeps alive.
struct SampleFields {
  std::vector<std::string_view> fields;  // parallel to config->column_names
  const ShardConfig* config = nullptr;   // names and encodings of `fields`
};

class ShardReader {
 public:
  virtual ~ShardReader() = default;

  virtual uint32_t num_samples() const = 0;
  /// The shard's file (or URL) as errors name it.
  virtual const std::string& origin() const = 0;
  /// Keeps the bytes behind every view (and every config) alive without the reader.
  virtual const std::shared_ptr<const void>& owner() const = 0;
  /// The file every view lies in, when the reader maps it as stored; null otherwise (a
  /// decompressed shard, a parsed one). Lives as long as the reader.
  virtual const MappedShardFile* mapped_file() const { return nullptr; }

  /// Sample `i`'s fields into `out` (reusing its storage). kDataLoss naming the shard and the
  /// sample when its stored record is malformed.
  /// \pre i < num_samples()
  virtual Status ReadSample(uint32_t i, SampleFields& out) const = 0;
};

}  // namespace ferry
