// DownloadDigest: the digests of a file that a download is writing, computed as its bytes land,
// in file order, by a thread of its own that reads them back from the page cache behind the
// download.
//
// Why a thread that follows rather than hashing in the download's sink: the sinks run on the
// transport's one I/O thread, which moves every other request's bytes too (MD5 there would cap
// the whole process at one core's MD5 rate), and a download in ranged parts writes them out of
// order while a digest must see the bytes in order. The follower sleeps until the part at its
// cursor has landed a step further (1 MiB, or the part's end), so the download wakes it once per
// step, not once per chunk.
//
// What it computes: XXH3-64 of every byte, for the cache's digest record (digest_record.h), and
// when asked the checksum the store sends with a GET for free - MD5, CRC32, CRC32C or CRC64NVME
// (storage/http/store_checksum.h). That may also be asked for after the download (Finish with
// another kind than was computed on the way): one more pass over the file.
//
// A small whole download needs no follower: DownloadToFile digests it once it has landed
// (DigestFile), on its own thread.
//
// Thread-safety: Landed may be called from any thread (the parts' sinks); Start, Finish and the
// destructor from the thread that owns the download.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "cache/download_progress.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry::internal_cache {

struct FileDigests {
  uint64_t bytes = 0;  // how many were digested
  uint64_t xxh3 = 0;
  ChecksumKind checksum_kind = ChecksumKind::kNone;  // kNone when none was computed
  std::string checksum;  // lowercase hex, as ObjectChecksum::hex spells it
};

/// XXH3-64 (and `checksum`, unless kNone) of `data` at once: for files written from memory.
FileDigests DigestOf(std::string_view data, ChecksumKind checksum);

/// XXH3-64 (and `checksum`, unless kNone) of the file at `path`, read once.
Result<FileDigests> DigestFile(const std::filesystem::path& path, ChecksumKind checksum);

class DownloadDigest {
 public:
  /// Follows the download into `path` (created, not yet written) that `parts` (in order,
  /// covering [0, size)) fill; computes `checksum` too, unless kNone.
  static Result<std::unique_ptr<DownloadDigest>> Start(const std::filesystem::path& path,
                                                       std::vector<DownloadPart> parts,
                                                       ChecksumKind checksum);
  ~DownloadDigest();  // stops the thread (a failed download)
  DownloadDigest(const DownloadDigest&) = delete;
  DownloadDigest& operator=(const DownloadDigest&) = delete;

  /// Part `part` has landed (been written) up to byte `end`. Cheap: a store, and a wake-up
  /// only when the follower waits for that much.
  void Landed(uint32_t part, uint64_t end);

  /// After every byte has landed: waits for the follower to reach the end and returns the
  /// digests. `want` (unless kNone) other than what was computed on the way reads the file once
  /// more for it.
  Result<FileDigests> Finish(ChecksumKind want);

 private:
  struct Part {
    DownloadPart range;
    std::atomic<uint64_t> landed{0};
  };
  DownloadDigest(const std::filesystem::path& path, int fd, std::vector<DownloadPart> parts,
                 ChecksumKind checksum);
  void Follow(std::stop_token stop);
  // Waits until part `p` has landed up to `want`, or stop; returns what has landed.
  uint64_t WaitFor(size_t p, uint64_t want, std::stop_token stop);

  const std::filesystem::path path_;
  const int fd_;  // the file, read-only, our own descriptor
  const ChecksumKind checksum_;
  std::vector<Part> parts_;  // sized once: its atomics never move

  std::mutex mu_;
  std::condition_variable_any landed_cv_;
  std::atomic<size_t> waiting_part_{0};
  std::atomic<uint64_t> waiting_for_{~uint64_t{0}};  // the mark the follower sleeps until
  Status result_;          // the follower's error, if any; set before it ends
  FileDigests digests_;    // the follower's, once it has reached the end
  std::jthread follower_;  // last: started once everything above exists
};

}  // namespace ferry::internal_cache
