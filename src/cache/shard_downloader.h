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
//   4. check the size against index.json and the digest with validate_hash; a mismatch (or an
//      object that changed while it was read: 412 to a resume pinned with If-Match) deletes the
//      temporary and downloads again (after a pause that doubles from 50 ms), up to 6 times in
//      all, or until two downloads the store
//      vouched for (whole, with its ETag) fail alike (a corrupt object, or one of another size
//      than index.json's, costs two), then fails with kDataLoss naming the shard and the
//      algorithm;
//   5. decompress into the raw file's temporary; write the raw file's digest record
//      (digest_record.h: its XXH3, computed as the bytes landed, src/cache/download_digest.h),
//      then rename the file into place (neither is fsynced: see Publish). A download is also
//      checked against the checksum the store sent with it (its MD5 or CRC:
//      storage/http/store_checksum.h), when it sent one (a mismatch is step 4's).
//      The compressed file is renamed into place too with keep_zip (first, so that a crash in
//      between leaves the zip and no raw file - never a temporary beside a published raw file),
//      else deleted.
// Every failure removes the temporaries it made: only a rename publishes a shard file.
//
// Without a remote only step 2 exists, and the compressed file is never deleted.
//
// Thread-safety: Fetch may run on many threads at once for different shards.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "cache/cache_layout.h"
#include "cache/download_digest.h"
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

/// What a download digests as its bytes land (src/cache/download_digest.h).
struct DownloadChecks {
  bool digest = false;          // XXH3-64, for the digest record
  bool store_checksum = false;  // the checksum the store sends with the object, if it sends one
  // ... of the kind computed on the way, for a download in one piece and one in ranged parts
  // (replies of the whole object may carry another: S3's CRCs). Another kind the store sends
  // costs one more pass over the file.
  ChecksumKind expected_whole = ChecksumKind::kNone;
  ChecksumKind expected_ranged = ChecksumKind::kNone;
};

struct DownloadedFile {
  std::optional<FileDigests> digests;  // when DownloadChecks asked for any
  ObjectChecksum store_checksum;       // what the store sent with the object; may be empty
  bool ranged = false;                 // it came in ranged parts
  std::string source;                  // ObjectInfo::source: which mirror sent it
};

/// Downloads the whole object `key` into a new file `tmp` (which must not exist), checking that
/// it has `expected_size` bytes (kDataLoss otherwise). Large objects come as ranged parts (see
/// the file comment). On error `tmp` is removed. The file is not flushed to disk (see Publish).
/// A stop request ends the download at the next bytes that arrive, with kCancelled.
/// With `progress_record` set, how far the bytes have landed is told to readers through a
/// record there (src/cache/download_progress.h) while the download runs. Comparing the digests
/// with the store's checksum is the caller's. `vouched` (may be null) is set when the body came
/// whole as the store described the object - its size and ETag in the replies - whether or not
/// that size is index.json's: the object's own word, not the way's.
Result<DownloadedFile> DownloadToFile(ObjectStore& store, std::string_view key,
                                      const std::filesystem::path& tmp, uint64_t expected_size,
                                      const PartOptions& parts, std::stop_token stop = {},
                                      const std::filesystem::path& progress_record = {},
                                      DownloadChecks checks = {}, bool* vouched = nullptr);

struct ShardDownloaderOptions {
  bool keep_zip = false;
  std::function<bool(std::string_view basename)> keep_zip_of;  // and these compressed files
  std::optional<std::string> validate_hash;
  PartOptions parts;
  /// Writes a digest record (digest_record.h) for every raw file it publishes.
  bool digest_records = true;
  /// Checks a download against the checksum the store sends with it (MD5 or CRC:
  /// storage/http/store_checksum.h).
  bool store_checksums = true;
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
  bool KeepZip(std::string_view basename) const {
    return options_.keep_zip || (options_.keep_zip_of && options_.keep_zip_of(basename));
  }
  // What the attempts at one file learn for the next (XXH3s of their bytes).
  struct Attempts {
    std::optional<uint64_t> mismatched;  // bytes that disagreed with the store's checksum
    std::optional<uint64_t> unchecked;   // bytes that came without the checksum expected
  };
  // One download (and, for a compressed file, decompression) attempt. `arrived` is set once the
  // body has come whole as the store described it (DownloadToFile's `vouched`), before its size
  // and digests are checked against index.json.
  Status DownloadOnce(const ShardDescription& shard, const ShardFile& file,
                      const MakeRoomFn& make_room, std::stop_token stop, Attempts& attempts,
                      bool& arrived) const;
  // kDataLoss when `got` disagrees with the checksum the store sent (see DownloadOnce), or came
  // without one where the store's replies have carried one (`expected`: its ETag or Content-MD5
  // may have been damaged on the way) - until two such downloads bring the same bytes.
  Status CheckStoreChecksum(const DownloadedFile& got, const std::string& url, bool expected,
                            Attempts& attempts) const;
  // Publishes the raw file `tmp` as `basename`, with its digest record when there is one.
  Status PublishRaw(const std::filesystem::path& tmp, std::string_view basename,
                    const std::optional<FileDigests>& digests) const;
  // Checks the validate_hash digest of `data`, the contents of `file`.
  Status CheckDigest(std::string_view data, const FileInfo& file, std::string_view origin) const;

  std::shared_ptr<ObjectStore> remote_;
  std::string remote_prefix_;
  CacheLayout layout_;
  ShardDownloaderOptions options_;
  // The kind of checksum the last download in one piece, and in ranged parts, came with (the
  // next one computes it on the way).
  mutable std::atomic<ChecksumKind> expected_whole_{ChecksumKind::kMd5};
  mutable std::atomic<ChecksumKind> expected_ranged_{ChecksumKind::kMd5};
  // The shapes of download (whole, or ranged parts) and sources (mirrors) whose replies have
  // carried a checksum: one of them without is suspect. By shape, because S3 sends its CRCs
  // only with whole objects (a large shard that comes in ranged parts has the ETag's MD5 or
  // nothing, whatever the small ones came with); by source, because each mirror is its own
  // store.
  mutable Mutex seen_mu_;
  mutable std::set<std::string> checksum_seen_ GUARDED_BY(seen_mu_);
  // Set once two downloads agreed with each other and not with the store's checksum: the
  // store's "MD5" (an ETag, say) is not one, and is not checked again.
  mutable std::atomic<bool> checksum_untrusted_{false};
};

}  // namespace ferry::internal_cache
