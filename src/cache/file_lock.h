// FileLock: an flock() on a lock file, held for the life of the object (RAII).
//
// flock locks belong to the open file description: two opens of the same file conflict even
// inside one process, so threads are serialized exactly like processes, and the kernel drops a
// lock when the last descriptor of its description closes - a killed process never leaves a lock
// behind. Unlock() releases with LOCK_UN before closing, so a copy of the descriptor inherited by
// a fork()ed child (torch DataLoader workers) cannot keep the lock alive after we let it go.
//
// Lock files are created on first use and never deleted: removing a lock file while another
// process has it open would let two processes "hold" two different files under one name.
//
// Thread-safety: a FileLock is a value owned by one thread at a time; distinct objects may be
// used concurrently.
#pragma once

#include <filesystem>
#include <optional>
#include <stop_token>
#include <utility>

#include "ferry/result.h"

namespace ferry::internal_cache {

enum class LockMode { kShared, kExclusive };

class FileLock {
 public:
  /// Opens `path` (creating it) and locks it, waiting as long as a conflicting lock is held -
  /// or, when `stop` can be requested, until it is: then kCancelled. (A stoppable wait polls,
  /// every few milliseconds: flock has no timeout, and only a signal would wake it.)
  static Result<FileLock> Lock(const std::filesystem::path& path, LockMode mode,
                               std::stop_token stop = {});

  /// Like Lock, but nullopt instead of waiting when a conflicting lock is held.
  static Result<std::optional<FileLock>> TryLock(const std::filesystem::path& path, LockMode mode);

  /// Like TryLock, on `fd`, which the caller opened with OpenLockFile (to try one file many
  /// times): the lock, which then owns `fd` (set to -1), or nullopt, `fd` staying the caller's.
  /// An error names `path`.
  static Result<std::optional<FileLock>> TryLockOpened(int& fd, LockMode mode,
                                                       const std::filesystem::path& path);

  FileLock() = default;
  FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() { Unlock(); }

  bool held() const { return fd_ >= 0; }
  /// The locked descriptor (e.g. to stamp its mtime), or -1.
  int fd() const { return fd_; }

  /// Releases the lock now (no-op when not held).
  void Unlock();

  /// Hands the still-locked descriptor to the caller, who releases it with UnlockAndClose.
  int Release() { return std::exchange(fd_, -1); }

 private:
  explicit FileLock(int fd) : fd_(fd) {}

  int fd_ = -1;
};

/// LOCK_UN, then close: releases a descriptor handed out by FileLock::Release. -1 is a no-op.
void UnlockAndClose(int fd);

/// Opens (creating) a lock file, unlocked: for a caller that tries one file many times
/// (DownloadSlots). An error names the file.
Result<int> OpenLockFile(const std::filesystem::path& path);

}  // namespace ferry::internal_cache
