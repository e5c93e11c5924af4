// WebDatasetWriter: samples into WebDataset tar shards and the shard list that describes them
// (index.json, src/format/webdataset_index.h), so that what it writes streams through ferry and
// reads with WebDataset itself. A sample is a key and named fields; each field becomes the
// member "<key>.<field>", in the order given, so that WebDataset groups them back into the same
// sample (src/format/webdataset_samples.h). Shards are "shard-000000.tar", ... : a shard is
// closed before a sample would take it past `size_limit` (a sample larger than that gets a shard
// of its own). Each shard appears whole or not at all; index.json is written last, by Finish.
//
// A key must not be empty, contain '.' in its last component (WebDataset splits the key from the
// field there) or equal the key before it (the two samples would read back as one); a field must
// be a non-empty lower-case name without '/' that does not start with "__", once per sample.
// Anything else is kInvalidArgument naming the key.
//
// Thread-safety: one thread per writer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "ferry/format/dataset_description.h"
#include "ferry/result.h"
#include "format/tar_writer.h"

namespace ferry::internal_format {

struct WebDatasetWriterOptions {
  std::filesystem::path out;
  uint64_t size_limit = uint64_t{64} << 20;  // bytes of tar per shard
  /// An index.json already in `out` is replaced; otherwise it is kAlreadyExists.
  bool exist_ok = false;
  /// Called with each shard's basename once it is complete (e.g. to upload it).
  std::function<void(const std::string&)> on_shard_written;
};

/// One field of a sample: its name (the member's extension) and its bytes.
using WebDatasetFieldData = std::pair<std::string_view, std::string_view>;

class WebDatasetWriter {
 public:
  static Result<std::unique_ptr<WebDatasetWriter>> Create(WebDatasetWriterOptions options);

  Status Write(std::string_view key, std::span<const WebDatasetFieldData> fields);

  /// Closes the last shard and writes index.json; the description of what was written.
  Result<DatasetDescription> Finish();

 private:
  explicit WebDatasetWriter(WebDatasetWriterOptions options) : options_(std::move(options)) {}
  Status CloseShard();

  WebDatasetWriterOptions options_;
  std::optional<TarWriter> shard_;
  uint64_t shard_samples_ = 0;
  std::string previous_key_;
  DatasetDescription description_;
  std::shared_ptr<const ShardConfig> config_ = std::make_shared<const ShardConfig>();
};

}  // namespace ferry::internal_format
