// DownloadProgress: how far a shard's download has landed in its temporary file, told to every
// process on the node, so that a reader can serve a sample whose bytes have arrived while the
// rest of its shard is still on the way (docs/streaming.md, "Samples as their bytes arrive").
//
// The downloader writes a record of one page beside its download lock (CacheLayout::
// ProgressPath), mapped shared: the temporary file's device and inode, the byte range of each
// part the download comes in and, per part, how far it has landed. Each chunk is written to the
// temporary (pwrite) before its part's mark moves past it, so a reader that sees the mark and
// then reads the temporary through its own descriptor reads those bytes from the page cache.
//
// Crash safety is the cache's as before: the file under a shard's name is only ever complete;
// this record and the temporary are what a download in progress leaves, and the next downloader
// removes both. What tells a reader that the writer is gone: the writer holds an exclusive flock
// on the record as long as it runs, so a reader that can take a shared one knows it was killed
// (or ended) and stops waiting - with an error, never with bytes that did not land. A reader
// holds the temporary open, so bytes it has seen land stay readable even once the file is
// removed or renamed.
//
// Waiting readers sleep on a futex in the record (shared between processes), each telling the
// writer the mark it waits for; the writer makes the wake-up system call only when a part
// reaches the least such mark, not per chunk.
//
// What a landed mark does not promise: bytes of the object as it is at the end of the download
// (an object rewritten during it fails the download - mixed etags - after a reader may have
// served a sample from its first version), bytes checked against the MD5 the store sent (a
// sample may be served from bytes the check then rejects, and the shard is fetched again) and
// bytes checked against validate_hash, under which no record is written at all.
//
// Thread-safety: a writer is used by its download's threads (Landed from any of them); a reader
// by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/result.h"

namespace ferry::internal_cache {

/// The byte range [begin, end) of the object that one part of a download brings, in order.
struct DownloadPart {
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// The most parts a record describes (kMaxDownloadParts fits).
inline constexpr uint32_t kMaxProgressParts = 64;

struct ProgressRecord;  // the shared page (download_progress.cc)

class DownloadProgressWriter {
 public:
  /// Creates the record at `path` (removing one a killed download left) for the download into
  /// the temporary `tmp_fd` of `size` bytes coming as `parts` (together covering [0, size)).
  /// An error says why no record could be made; the download goes on without one.
  static Result<std::unique_ptr<DownloadProgressWriter>> Create(
      const std::filesystem::path& path, int tmp_fd, uint64_t size,
      const std::vector<DownloadPart>& parts);
  ~DownloadProgressWriter();  // an unfinished download counts as failed; removes the record
  DownloadProgressWriter(const DownloadProgressWriter&) = delete;
  DownloadProgressWriter& operator=(const DownloadProgressWriter&) = delete;

  /// Part `part` has landed up to (not including) byte `end` of the object.
  void Landed(uint32_t part, uint64_t end);
  /// The download ended: every byte landed (`complete`), or it failed.
  void Finish(bool complete);

 private:
  DownloadProgressWriter(std::filesystem::path path, int fd, ProgressRecord* record)
      : path_(std::move(path)), fd_(fd), record_(record) {}
  void Wake();

  std::filesystem::path path_;
  int fd_ = -1;
  ProgressRecord* record_ = nullptr;
  bool finished_ = false;
};

class DownloadProgressReader {
 public:
  /// The download in progress that the record at `record_path` describes, writing into `tmp`,
  /// or nullopt when there is none to read from (no record, one not yet written, one of another
  /// temporary, or a writer that is gone before finishing).
  static Result<std::optional<std::unique_ptr<DownloadProgressReader>>> Open(
      const std::filesystem::path& record_path, const std::filesystem::path& tmp);
  ~DownloadProgressReader();
  DownloadProgressReader(const DownloadProgressReader&) = delete;
  DownloadProgressReader& operator=(const DownloadProgressReader&) = delete;

  /// The object's size.
  uint64_t size() const;

  /// True when [offset, offset + length) has landed.
  bool Landed(uint64_t offset, uint64_t length) const;

  /// How many bytes from `offset` on have landed, in one run (up to the end of the part that
  /// holds `offset`; the next part may have landed too): what can be read now without waiting.
  uint64_t LandedFrom(uint64_t offset) const;

  /// True once the download has ended, every byte landed or not (the writer finished, failed
  /// or is gone).
  bool Ended() const;

  /// Waits until [offset, offset + length) has landed (clipped to the object), then reads it.
  /// kDeadlineExceeded when `deadline` comes first; kUnavailable naming the temporary when the
  /// download ended (failed, or its process is gone) without those bytes.
  Result<std::string> Read(uint64_t offset, uint64_t length,
                           std::chrono::steady_clock::time_point deadline) const;

 private:
  DownloadProgressReader(std::filesystem::path tmp, int record_fd, int tmp_fd,
                         ProgressRecord* record)
      : tmp_(std::move(tmp)), record_fd_(record_fd), tmp_fd_(tmp_fd), record_(record) {}
  bool WriterGone() const;
  // Tells the writer the mark this reader is about to sleep for.
  void WaitFor(uint64_t offset, uint64_t length) const;

  std::filesystem::path tmp_;
  int record_fd_ = -1;
  int tmp_fd_ = -1;
  ProgressRecord* record_ = nullptr;
};

}  // namespace ferry::internal_cache
