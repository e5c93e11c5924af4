// Small POSIX file helpers shared by every layer that touches local disk.
//
// Files that others may read are written under a temporary name in the same folder, flushed and
// renamed into place (WriteFileAtomically): a crash leaves either nothing or the whole file,
// never a partial one under the final name.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "ferry/result.h"

namespace ferry {

/// A Status for a failed system call: ENOENT/ENOTDIR -> kNotFound, EACCES/EPERM/EROFS ->
/// kPermissionDenied, ENOSPC/EDQUOT/EMFILE/ENFILE/ENOMEM -> kResourceExhausted, EEXIST ->
/// kAlreadyExists, EINTR/EAGAIN/EIO -> kUnavailable, EISDIR/EINVAL/ENAMETOOLONG ->
/// kInvalidArgument, else kInternal. The message is "<path>: <what> failed: <strerror>".
Status ErrnoToStatus(int error_number, std::string_view what, const std::filesystem::path& path);

/// Whether `status` (ErrnoToStatus's) says the disk, or the user's quota, is full: ENOSPC or
/// EDQUOT. (kResourceExhausted alone also means EMFILE or ENOMEM.)
bool IsDiskFullError(const Status& status);

struct DiskSpace {
  uint64_t free_bytes = 0;  // what an unprivileged writer may still take
  uint64_t total_bytes = 0;
};
/// The space of the filesystem that holds `folder` (statvfs).
Result<DiskSpace> MeasureDiskSpace(const std::filesystem::path& folder);

/// `status` as it was, or - when it says the disk is full (IsDiskFullError) - with how full the
/// disk holding `file`'s folder is: "... (the disk holding FOLDER has 0 B free of 1 MiB)".
Status SayingHowFull(Status status, const std::filesystem::path& file);

/// Whether `path` (symlinks followed) is a regular file; false when it cannot be stat'ed.
bool IsRegularFile(const std::filesystem::path& path);

/// The whole file. kNotFound names the path when it does not exist.
Result<std::string> ReadFileToString(const std::filesystem::path& path);

/// Writes `contents` to `path` through an AtomicFile, then fsyncs the folder so that the rename
/// itself is durable. On error the temporary is removed.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view contents,
                           unsigned mode = 0644);

/// A file time from stat (st_mtim, st_ctim) as a wall-clock time point.
inline std::chrono::system_clock::time_point FileTime(const std::timespec& ts) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

/// The size of a regular file and where its first hole starts: a range the filesystem holds no
/// data for, which reads as zeros.
struct FileExtent {
  uint64_t size = 0;
  uint64_t first_hole = 0;  // == size when the file has no hole
};

/// The FileExtent of the regular file at `path` (kNotFound when absent, kInvalidArgument when it
/// is not a regular file). A file given its size first (fallocate, ftruncate) has a hole wherever
/// it was not written - and again after a power cut took written data before it reached the disk:
/// ext4, XFS and tmpfs report such unwritten ranges as holes, while the pages of a file written
/// since boot count as data until they are on disk. Only filesystems where a hole cannot be
/// anything else report holes (ext4, XFS, btrfs, tmpfs, overlayfs); others, such as ZFS, which
/// stores a block of zeros as a hole, report none.
Result<FileExtent> StatFileExtent(const std::filesystem::path& path);

/// A unique temporary name beside `path` (same folder, so rename is atomic), e.g.
/// "shard.00000.mds.tmp.4242.9f3c27a1.7": pid, a number drawn once per process (a container
/// restarted gets the same pid again) and a counter.
std::filesystem::path TemporaryPathFor(const std::filesystem::path& path);

/// A new file that appears under its final path whole or not at all. It is written under a
/// unique temporary name beside that path (a name already taken - a killed process's leftover -
/// is never reused); Commit flushes it, closes it and renames it into place. Dropped before
/// Commit (an error on the way), it is closed and removed.
class AtomicFile {
 public:
  static Result<AtomicFile> Create(const std::filesystem::path& path, unsigned mode = 0644);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();

  const std::filesystem::path& temporary() const { return temporary_; }
  /// Appends all of `data`; an error names the temporary (and, the disk full, how full).
  Status Write(std::string_view data);
  /// fsync, close, rename over the final path (the folder is not fsynced). On error the
  /// temporary is removed.
  Status Commit();

 private:
  AtomicFile(std::filesystem::path path, std::filesystem::path temporary, int fd)
      : path_(std::move(path)), temporary_(std::move(temporary)), fd_(fd) {}
  void Discard();

  std::filesystem::path path_;
  std::filesystem::path temporary_;
  int fd_ = -1;  // -1 once committed or discarded
};

}  // namespace ferry
