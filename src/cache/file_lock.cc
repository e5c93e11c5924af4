#include "cache/file_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "base/file_util.h"
#include "base/stoppable_sleep.h"
#include "cache/cache_layout.h"

namespace ferry::internal_cache {
Result<int> OpenLockFile(const std::filesystem::path& path) {
  // Read-write when allowed, so that the use-lock's mtime can be stamped; read-only otherwise
  // (a cache folder shared between users, or on a read-only file system, where flock still
  // works).
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, Modes().file);
  if (fd < 0 && (errno == EACCES || errno == EROFS)) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return ErrnoToStatus(errno, "open lock file", path);
  return fd;
}

namespace {

int FlockOperation(LockMode mode) { return mode == LockMode::kShared ? LOCK_SH : LOCK_EX; }

}  // namespace

Result<FileLock> FileLock::Lock(const std::filesystem::path& path, LockMode mode,
                                std::stop_token stop) {
  FERRY_ASSIGN_OR_RETURN(const int fd, OpenLockFile(path));
  const bool stoppable = stop.stop_possible();
  // The first naps are short: most conflicts are another thread's check-and-publish, over in
  // microseconds. A download held elsewhere takes seconds, and 10 ms later is soon enough.
  using std::chrono::milliseconds;
  milliseconds nap(1);
  // A signal handler (the profiler, Python's SIGINT) interrupts a waiting flock with EINTR;
  // the wait simply continues.
  while (::flock(fd, FlockOperation(mode) | (stoppable ? LOCK_NB : 0)) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    if (stoppable && err == EWOULDBLOCK) {
      if (!SleepUnlessStopped(nap, stop)) {
        ::close(fd);
        return CancelledError(fmt::format("{}: stopped while waiting for the lock", path.string()));
      }
      nap = std::min(nap * 2, milliseconds(10));
      continue;
    }
    ::close(fd);
    return ErrnoToStatus(err, "flock", path);
  }
  return FileLock(fd);
}

Result<std::optional<FileLock>> FileLock::TryLock(const std::filesystem::path& path,
                                                  LockMode mode) {
  FERRY_ASSIGN_OR_RETURN(int fd, OpenLockFile(path));
  auto lock = TryLockOpened(fd, mode, path);
  if (fd >= 0) ::close(fd);  // not taken over: a conflict or an error
  return lock;
}

Result<std::optional<FileLock>> FileLock::TryLockOpened(int& fd, LockMode mode,
                                                        const std::filesystem::path& path) {
  while (::flock(fd, FlockOperation(mode) | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return std::optional<FileLock>();
    return ErrnoToStatus(errno, "flock", path);
  }
  return std::optional<FileLock>(FileLock(std::exchange(fd, -1)));
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    Unlock();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void FileLock::Unlock() { UnlockAndClose(std::exchange(fd_, -1)); }

void UnlockAndClose(int fd) {
  if (fd < 0) return;
  while (::flock(fd, LOCK_UN) != 0 && errno == EINTR) {
  }
  ::close(fd);
}

}  // namespace ferry::internal_cache
