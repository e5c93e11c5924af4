// ShardDownloader: makes one shard's raw file exist in the cache folder, complete and checked.
//
// The caller holds the shard's download lock and has seen that the raw file is missing. Then:
//   1. remove the shard's temporaries left by a killed download (only a lock holder writes them,
//      and the lock is ours);
//   2. if the compressed file is already local (kept by keep_zip, or a local dataset), check it
//      with validate_hash and decompress it - no download;
//   3. otherwise make room (the caller's callback evicts), then download the compressed file if
//      the dataset has one, else the raw file, into its temporary: one streamed read, or, at or
//      above parallel_part_threshold, several ranged reads at once (`download_parts`, or what the
//      PartTuner chooses from the rates past downloads reached), each written at its
//      offset (pwrite) into one preallocated file, with no HEAD first (every part's response
//      gives the object's size and etag, which must agree); a failing part stops the others and
//      fails the download; while it runs, a raw file's download (without validate_hash) tells
//      readers how far each part has landed (src/cache/download_progress.h);
//   4. check the size against index.json and the digest with validate_hash; a mismatch deletes
//      the temporary and downloads once more, then fails with kDataLoss naming the shard and the
//      algorithm;
//   5. decompress into the raw file's temporary; rename into place (not fsynced: see Publish).
//      The compressed file is renamed into place too with keep_zip (first, so that a crash in
//      between leaves the zip and no raw file - never a temporary beside a published raw file),
//      else deleted.
// Every failure removes the temporaries it made: only a rename publishes a shard file.
//
// Without a remote only step 2 exists, and the compressed file is never deleted.
//
// Thread-safety: Fetch may run on many threads at once for different shards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "cache/cache_layout.h"
#include "cache/part_tuner.h"
#include "ferry/format/dataset_description.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry::internal_cache {

struct PartOptions {
  uint64_t parallel_part_threshold = uint64_t{32} << 20;
  uint32_t download_parts = 8;
  /// When set, chooses the parts instead of download_parts, and measures every large body.
  PartTuner* tuner = nullptr;
};

/// The most ranged parts one shard comes in at once (download_parts).
inline constexpr uint32_t kMaxDownloadParts = 64;
/// kInvalidArgument, with the range, unless 1 <= parts <= kMaxDownloadParts.
Status CheckDownloadParts(uint32_t parts);

/// Downloads the whole object `key` into a new file `tmp` (which must not exist), checking that
/// it has `expected_size` bytes (kDataLoss otherwise). Large objects come as ranged parts (see
/// the file comment). On error `tmp` is removed. The file is not flushed to disk (see Publish).
/// A stop request ends the download at the next bytes that arrive, with kCancelled.
/// With `progress_record` set, how far the bytes have landed is told to readers through a
/// record there (src/cache/download_progress.h) while the download runs.
Status DownloadToFile(ObjectStore& store, std::string_view key, const std::filesystem::path& tmp,
                      uint64_t expected_size, const PartOptions& parts, std::stop_token stop = {},
                      const std::filesystem::path& progress_record = {});

struct ShardDownloaderOptions {
  bool keep_zip = false;
  std::optional<std::string> validate_hash;
  PartOptions parts;
};

class ShardDownloader {
 public:
  /// Called with the bytes a download is about to add to the folder (at its peak).
  using MakeRoomFn = std::function<Status(uint64_t bytes)>;

  /// `remote` may be null: a local dataset, where only local compressed files are decompressed.
  ShardDownloader(std::shared_ptr<ObjectStore> remote, std::string remote_prefix,
                  CacheLayout layout, ShardDownloaderOptions options);

  /// Makes `shard`'s raw files exist (see the file comment): its companions, then raw_data.
  /// \pre the caller holds the shard's download lock. A stop request ends a download in
  /// progress with kCancelled, and nothing is published.
  Status Fetch(const ShardDescription& shard, const MakeRoomFn& make_room,
               std::stop_token stop = {}) const;

  /// The remote key of a file named `basename` in index.json.
  std::string RemoteKey(std::string_view basename) const;

 private:
  // Makes one raw file of `shard` exist.
  Status FetchFile(const ShardDescription& shard, const ShardFile& file,
                   const MakeRoomFn& make_room, std::stop_token stop) const;
  // Decompresses the local compressed file into the raw file. kDataLoss on a digest mismatch.
  Status DecompressLocalZip(const ShardDescription& shard, const ShardFile& file) const;
  // One download (and, for a compressed file, decompression) attempt.
  Status DownloadOnce(const ShardDescription& shard, const ShardFile& file,
                      const MakeRoomFn& make_room, std::stop_token stop) const;
  // Checks the validate_hash digest of `data`, the contents of `file`.
  Status CheckDigest(std::string_view data, const FileInfo& file, std::string_view origin) const;

  std::shared_ptr<ObjectStore> remote_;
  std::string remote_prefix_;
  CacheLayout layout_;
  ShardDownloaderOptions options_;
};

}  // namespace ferry::internal_cache
