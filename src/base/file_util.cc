#include "base/file_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "base/human_size.h"

namespace ferry {
namespace {

// Closes a descriptor on scope exit.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Whether a hole in a file on the filesystem of `fd` can only be a range never written (or
// written and lost): so on ext4, XFS, btrfs and tmpfs, and on overlayfs, which asks the one
// beneath. Not on ZFS, whose compression stores a block of zeros as a hole - a sample of zeros
// would look like lost data there, and be downloaded again and again.
bool HolesAreUnwrittenRanges(int fd) {
  struct statfs fs;
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {  // NOLINT(runtime/int): statfs's own type
    case EXT4_SUPER_MAGIC:                          // also ext2 and ext3
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
      return true;
    default:
      return false;
  }
}

Status WriteAll(int fd, std::string_view data, const std::filesystem::path& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

Status ErrnoToStatus(int error_number, std::string_view what, const std::filesystem::path& path) {
  std::string message =
      fmt::format("{}: {} failed: {}", path.string(), what, std::strerror(error_number));
  switch (error_number) {
    case ENOENT:
    case ENOTDIR:
      return NotFoundError(std::move(message));
    case EACCES:
    case EPERM:
    case EROFS:
      return PermissionDeniedError(std::move(message));
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return ResourceExhaustedError(std::move(message));
    case EEXIST:
      return AlreadyExistsError(std::move(message));
    case EINTR:
    case EAGAIN:
    case EIO:
      return UnavailableError(std::move(message));
    case EISDIR:
    case EINVAL:
    case ENAMETOOLONG:
      return InvalidArgumentError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

Result<std::string> ReadFileToString(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, "stat", path);
  if (S_ISDIR(st.st_mode)) return ErrnoToStatus(EISDIR, "read", path);
  // Read straight into the result: the size from stat is a hint (the file may change, and
  // /proc files report 0), so keep reading until EOF and grow when needed.
  std::string out(static_cast<size_t>(st.st_size) + 1, '\0');
  size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(std::max<size_t>(out.size() * 2, 1 << 16));
    const ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "read", path);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  out.resize(used);
  return out;
}

bool IsDiskFullError(const Status& status) {
  if (status.code() != StatusCode::kResourceExhausted) return false;
  // ErrnoToStatus's message ends in strerror's text.
  return status.message().find(std::strerror(ENOSPC)) != std::string::npos ||
         status.message().find(std::strerror(EDQUOT)) != std::string::npos;
}

bool IsRegularFile(const std::filesystem::path& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<FileExtent> StatFileExtent(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO under the name must not hang the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(fmt::format("{}: not a regular file", path.string()));
  }
  FileExtent extent{.size = static_cast<uint64_t>(st.st_size),
                    .first_hole = static_cast<uint64_t>(st.st_size)};
  if (extent.size == 0 || !HolesAreUnwrittenRanges(fd)) return extent;
  const off_t hole = ::lseek(fd, 0, SEEK_HOLE);
  if (hole >= 0) {
    extent.first_hole = std::min(extent.size, static_cast<uint64_t>(hole));
  } else if (errno != EINVAL) {  // EINVAL: no SEEK_HOLE here, so no hole to report
    return ErrnoToStatus(errno, "seek a hole in", path);
  }
  return extent;
}

std::filesystem::path TemporaryPathFor(const std::filesystem::path& path) {
  static std::atomic<uint64_t> counter{0};
  static const uint32_t nonce = std::random_device{}();
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}.{:08x}.{}", ::getpid(), nonce, counter.fetch_add(1));
  return tmp;
}

Result<AtomicFile> AtomicFile::Create(const std::filesystem::path& path, unsigned mode) {
  constexpr int kAttempts = 64;
  std::filesystem::path tmp;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    tmp = TemporaryPathFor(path);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) return AtomicFile(path, tmp, fd);
    if (errno != EEXIST) break;
  }
  return ErrnoToStatus(errno, "create", tmp);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      fd_(std::exchange(other.fd_, -1)) {}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() {
  if (fd_ < 0) return;
  ::close(std::exchange(fd_, -1));
  ::unlink(temporary_.c_str());
}

Result<DiskSpace> MeasureDiskSpace(const std::filesystem::path& folder) {
  struct statvfs vfs {};
  if (::statvfs(folder.c_str(), &vfs) != 0) return ErrnoToStatus(errno, "statvfs", folder);
  return DiskSpace{.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize,
                   .total_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize};
}

Status SayingHowFull(Status status, const std::filesystem::path& file) {
  if (!IsDiskFullError(status)) return status;
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : ".";
  const auto space = MeasureDiskSpace(folder);
  if (!space) return status;
  return Status(
      status.code(),
      fmt::format("{} (the disk holding {} has {} free of {})", status.message(), folder.string(),
                  FormatBytes(space->free_bytes), FormatBytes(space->total_bytes)));
}

Status AtomicFile::Write(std::string_view data) {
  if (fd_ < 0)
    return FailedPreconditionError(fmt::format("{}: already closed", temporary_.string()));
  return SayingHowFull(WriteAll(fd_, data, temporary_), temporary_);
}

Status AtomicFile::Commit() {
  if (fd_ < 0)
    return FailedPreconditionError(fmt::format("{}: already closed", temporary_.string()));
  Status status;
  if (::fsync(fd_) != 0) status = ErrnoToStatus(errno, "fsync", temporary_);
  if (::close(std::exchange(fd_, -1)) != 0 && status.ok()) {
    status = ErrnoToStatus(errno, "close", temporary_);
  }
  if (status.ok() && ::rename(temporary_.c_str(), path_.c_str()) != 0) {
    status = ErrnoToStatus(errno, "rename", path_);
  }
  if (!status.ok()) ::unlink(temporary_.c_str());
  return SayingHowFull(std::move(status), temporary_);
}

Status WriteFileAtomically(const std::filesystem::path& path, std::string_view contents,
                           unsigned mode) {
  FERRY_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path, mode));
  FERRY_RETURN_IF_ERROR(file.Write(contents));
  FERRY_RETURN_IF_ERROR(file.Commit());
  // Make the rename itself durable.
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Status::Ok();
}

}  // namespace ferry
