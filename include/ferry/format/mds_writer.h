// MdsWriter: writes samples into MDS shards and index.json that Mosaic Streaming reads unchanged.
//
// Byte compatibility with the reference writer (spec §11): columns sorted by code point, the
// config block and index.json in Python's JSON form, records as in §5.1, and the rollover rule
// of §5.3 applied exactly - before adding a sample of record size r, the current shard is
// flushed (even when it holds no samples: the reference's empty-first-shard quirk) if
// size_limit < current_size + r + 4. The same samples with the same settings therefore give
// byte-identical raw shards and index.json.
//
// Where the reference silently writes something unreadable, MdsWriter refuses instead: a shard
// that would reach 4 GiB (offsets are u32), integers out of range for their column, and values
// of the wrong kind are kInvalidArgument.
//
// Flushing is pipelined: a full shard is handed to `flush_threads` background threads that
// compress, hash and write shards in parallel (temporary name, fsync, rename), while the caller
// goes on encoding. At most `max_pending_shards` full shards wait in the queue, plus one per
// flush thread in progress: memory stays within (max_pending_shards + flush_threads + 1) x
// size_limit. The first error in the background is returned by the next Write or by Finish. Finish
// writes index.json last, atomically, so a crashed run leaves no index that lists a missing shard.
//
// Thread-safety: one writer is used by one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferry/format/index.h"
#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry {

inline constexpr uint64_t kDefaultSizeLimit = uint64_t{1} << 26;

/// The number of cores, at least 1 and at most 8.
size_t DefaultFlushThreads();

struct MdsWriterOptions {
  std::filesystem::path out;  // local folder; created if missing
  /// Column name -> encoding, in any order (stored sorted).
  std::vector<std::pair<std::string, std::string>> columns;
  std::optional<std::string> compression;  // "zstd", "zstd:7", "gz", ... ; nullopt = none
  std::vector<std::string> hashes;         // sorted names, e.g. {"sha1", "xxh64"}
  std::optional<uint64_t> size_limit = kDefaultSizeLimit;  // nullopt (or 0) = one shard
  /// Replace an existing dataset in `out` (its index.json and shard.* files); otherwise a
  /// non-empty `out` is kAlreadyExists.
  bool exist_ok = false;
  size_t max_pending_shards = 2;
  /// Threads compressing, hashing and writing full shards (compression is the costly part).
  size_t flush_threads = DefaultFlushThreads();
  /// Called on a flush thread with the basename of each shard file once it is complete under
  /// its final name (not index.json): lets a caller upload shards while writing goes on. It may
  /// block (that holds the flush thread back, and with it the writer); it must not throw.
  std::function<void(const std::string& basename)> on_shard_written;
};

class MdsWriter {
 public:
  /// Validates the options (encodings, compression, hashes, size_limit < 2^32) and prepares
  /// `out`.
  static Result<std::unique_ptr<MdsWriter>> Create(MdsWriterOptions options);

  ~MdsWriter();  // stops the background thread; a writer never Finished leaves no index.json
  MdsWriter(const MdsWriter&) = delete;
  MdsWriter& operator=(const MdsWriter&) = delete;

  /// The stored (sorted) column order that WriteValues expects values in.
  const std::vector<std::string>& column_names() const;
  /// The config block every shard embeds (SerializeShardConfig gives its text).
  const ShardConfig& config() const;

  /// Appends one sample; `values` are in column_names() order (the fast path).
  Status WriteValues(std::span<const Value> values);

  /// Appends one sample given by column name. Extra keys are ignored (as the reference does);
  /// a missing column is kInvalidArgument.
  Status Write(const std::map<std::string, Value, std::less<>>& sample);

  /// Ends the shard being built now, so that the next sample starts a new shard (what the
  /// reference's flush_shard is for). A shard that holds no sample yet is left open: no empty
  /// shard is written. kFailedPrecondition after Finish.
  Status FlushShard();

  /// Flushes the last shard, waits for the background writes and writes index.json.
  /// Returns the index written. Calling Write after Finish is kFailedPrecondition.
  Result<DatasetDescription> Finish();

  uint64_t samples_written() const;
  /// Raw (uncompressed) bytes of the shards flushed so far.
  uint64_t raw_bytes_written() const;

 private:
  class Impl;
  explicit MdsWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Resolves a size_limit the way the reference does: an integer number of bytes or a human
/// size string ("64mb", "1.5kb"). 0 means no limit (nullopt). kInvalidArgument at or above
/// 2^32 or for text that is not a size.
Result<std::optional<uint64_t>> ResolveSizeLimit(std::string_view text);

}  // namespace ferry
