// ShardFormat: how the shards of one format are read, and the registry that finds a format by
// the name a ShardDescription gives (its `format`: "mds", ...). The layers above format/ open
// shards, and read samples of shards not yet local, only through it, so that a new format is a
// new ShardFormat here and nothing above.
//
// Thread-safety: formats are stateless singletons; every method may be called from any thread.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/format/dataset_description.h"
#include "ferry/format/shard_reader.h"
#include "ferry/result.h"

namespace ferry {

/// Reads `length` bytes at `offset` of a shard's remote raw file (fewer only at its end).
using RangeRead = std::function<Result<std::string>(uint64_t offset, uint64_t length)>;

/// A sample read by range, with the bytes its views point into.
struct RangedSample {
  SampleFields sample;
  std::shared_ptr<const std::string> owner;
};

/// Where each sample of a raw shard lies, read once by range (MDS: its offset table), so that
/// each sample then takes one ranged read of its own bytes.
class SampleSpans {
 public:
  virtual ~SampleSpans() = default;
  /// Samples of the shard.
  virtual uint32_t samples() const = 0;
  /// Bytes [first, second) of sample `i` in the raw file. \pre i < samples()
  virtual std::pair<uint64_t, uint64_t> Span(uint32_t i) const = 0;
  /// Sample `i` from its bytes (`record`: the Span's), as views into `record`.
  virtual Status Split(uint32_t i, std::string_view record, SampleFields& out) const = 0;
  /// Memory it holds, in bytes.
  virtual uint64_t memory_bytes() const = 0;
};

class ShardFormat {
 public:
  virtual ~ShardFormat() = default;

  /// The name descriptions give it.
  virtual std::string_view name() const = 0;

  /// Opens and validates the raw file of `shard` at `path`. kNotFound when the file is missing;
  /// kDataLoss naming the file when it does not match its description or its format.
  virtual Result<std::unique_ptr<ShardReader>> Open(const std::filesystem::path& path,
                                                    const ShardDescription& shard) const = 0;

  /// As Open, for a raw shard already in memory (a decompressed file, a fuzz input); `origin`
  /// names it in errors.
  virtual Result<std::unique_ptr<ShardReader>> FromBuffer(std::string data,
                                                          const ShardDescription& shard,
                                                          std::string origin) const = 0;

  /// As FromBuffer, for a shard with companion files: `files` holds the raw contents of each of
  /// shard.files() (the companions, then raw_data). By default: FromBuffer of the one file, and
  /// kInvalidArgument for a shard with companions.
  virtual Result<std::unique_ptr<ShardReader>> FromBuffers(std::vector<std::string> files,
                                                           const ShardDescription& shard,
                                                           std::string origin) const;

  /// Sample `i` of a raw shard that is not local, read with a few small ranged reads instead of
  /// the whole file (an iterator's first sample at a cold start; a sample of a shard whose
  /// download has landed its bytes), or nullopt where the format cannot say where a sample is
  /// without the whole shard. By default: nullopt.
  /// \pre i < shard.samples
  virtual Result<std::optional<RangedSample>> ReadByRange(const RangeRead& read,
                                                          const ShardDescription& shard,
                                                          uint32_t i) const;

  /// True when ReadByRange can read a sample (it does not always say nullopt).
  virtual bool ReadsByRange() const { return false; }

  /// The spans of the samples of a raw shard that is not local, read by range (one read, of a
  /// few bytes per sample); nullptr where the format cannot say without the whole shard (the
  /// default). kDataLoss naming what is wrong when what was read does not describe the shard.
  virtual Result<std::shared_ptr<const SampleSpans>> ReadSpans(const RangeRead& read,
                                                               const ShardDescription& shard) const;
};

/// The format called `name`, or kInvalidArgument naming it and listing the formats there are.
Result<const ShardFormat*> FindShardFormat(std::string_view name);

/// The names of the formats there are, sorted.
std::vector<std::string_view> ShardFormatNames();

}  // namespace ferry
