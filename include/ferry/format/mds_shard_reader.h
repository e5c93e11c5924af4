// MdsShardReader: random access to the samples of one raw (uncompressed) MDS shard; the
// ShardReader of the "mds" format (src/format/mds_format.h).
//
// The shard is memory-mapped (or held in a buffer after decompression) and samples are handed
// out as views into it: reading a sample copies nothing. Open validates once, up front, so that
// no later access can read outside the data:
//   1. the file size equals the index's raw_data.bytes and can hold the header;
//   2. N (the header's sample count) equals the index's `samples`;
//   3. offsets[0] = 8 + 4N + L leaves room for the config block, which parses and equals the
//      index entry's config;
//   4. offsets never decrease, offsets[N] equals the file size, and every record is long enough
//      for its variable-size table and fixed-size columns.
// Per access, the variable sizes of the requested record are checked against its length.
// Every error is kDataLoss naming the file (or origin) and the field at fault.
//
// Thread-safety: immutable after Open; any number of threads may read concurrently. Views stay
// valid while any copy of the reader (or the shared data()) is alive.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/format/index.h"
#include "ferry/format/shard_reader.h"
#include "ferry/result.h"

namespace ferry {

/// Splits one stored record into one payload view per column of `config` (views into `record`).
/// kDataLoss when the record's size table does not match its length. For records read without
/// their shard (ranged reads); MdsShardReader::ReadFields does the same for mapped shards.
Status SplitRecord(const ShardConfig& config, std::string_view record,
                   std::span<std::string_view> fields);

class MdsShardReader final : public ShardReader {
 public:
  /// Maps and validates the raw shard at `path` against its index entry.
  static Result<MdsShardReader> Open(const std::filesystem::path& path,
                                     const ShardDescription& entry);

  /// Validates a raw shard already in memory (a decompressed shard, a fuzz input). `origin`
  /// names it in errors.
  static Result<MdsShardReader> FromBuffer(std::string data, const ShardDescription& entry,
                                           std::string origin);

  uint32_t num_samples() const override { return num_samples_; }
  size_t num_columns() const { return columns_.size(); }
  const ShardConfig& config() const { return *config_; }
  const std::string& origin() const override { return origin_; }
  /// The whole raw shard.
  std::string_view data() const { return data_; }
  /// Keeps the bytes behind data() (and every view) alive; for zero-copy hand-off.
  const std::shared_ptr<const void>& owner() const override { return owner_; }
  /// Set when opened from a file (Open), not from a buffer.
  const MappedShardFile* mapped_file() const override {
    return mapped_file_.bytes.data() != nullptr ? &mapped_file_ : nullptr;
  }

  /// The stored record of sample `i` (the variable-size table plus payloads).
  /// \pre i < num_samples()
  std::string_view record(uint32_t i) const;

  /// Splits record `i` into one payload view per column (in column order) without allocating.
  /// \pre i < num_samples(), fields.size() == num_columns()
  Status ReadFields(uint32_t i, std::span<std::string_view> fields) const;

  /// ReadFields into `out`, with the shard's config.
  Status ReadSample(uint32_t i, SampleFields& out) const override;

  /// ReadFields into a new vector.
  Result<std::vector<std::string_view>> Fields(uint32_t i) const;

 private:
  struct Column {
    bool fixed;
    uint32_t size_or_slot;  // fixed size, or index into the variable-size table
  };

  static Result<MdsShardReader> Validate(std::shared_ptr<const void> owner, std::string_view data,
                                         const ShardDescription& entry, std::string origin);

  std::shared_ptr<const void> owner_;
  std::string_view data_;
  MappedShardFile mapped_file_;
  std::shared_ptr<const ShardConfig> config_;
  std::string origin_;
  uint32_t num_samples_ = 0;
  uint32_t num_variable_ = 0;
  uint64_t min_record_ = 0;  // 4 * num_variable_ + sum of fixed sizes
  std::vector<Column> columns_;
};

}  // namespace ferry
