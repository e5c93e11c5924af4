// Small POSIX file helpers shared by every layer that touches local disk.
//
// Files that others may read are written under a temporary name in the same folder, flushed and
// renamed into place (WriteFileAtomically): a crash leaves either nothing or the whole file,
// never a partial one under the final name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "ferry/result.h"

namespace ferry {

/// A Status for a failed system call: ENOENT/ENOTDIR -> kNotFound, EACCES/EPERM/EROFS ->
/// kPermissionDenied, ENOSPC/EDQUOT/EMFILE/ENFILE/ENOMEM -> kResourceExhausted, EEXIST ->
/// kAlreadyExists, EINTR/EAGAIN/EIO -> kUnavailable, EISDIR/EINVAL/ENAMETOOLONG ->
/// kInvalidArgument, else kInternal. The message is "<path>: <what> failed: <strerror>".
Status ErrnoToStatus(int error_number, std::string_view what, const std::filesystem::path& path);

/// The whole file. kNotFound names the path when it does not exist.
Result<std::string> ReadFileToString(const std::filesystem::path& path);

/// Writes `contents` to `path` through a unique temporary file in the same folder: write, fsync,
/// rename over `path`, fsync the folder. On error the temporary is removed.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view contents,
                           unsigned mode = 0644);

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

/// A new, empty file under a temporary name beside `path`, open for writing. A name already
/// taken (a leftover of a killed process) is never reused: the next one is tried.
struct TemporaryFile {
  std::filesystem::path path;
  int fd = -1;
};
Result<TemporaryFile> CreateTemporaryFor(const std::filesystem::path& path, unsigned mode);

}  // namespace ferry
