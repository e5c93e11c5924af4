// ReaderRegistry: how many iterators read a cache folder now, across processes - so that what
// each pins ahead of itself can be its share of cache_limit rather than half of it each.
//
// Each reader holds an exclusive flock on a file of its own, .ferry/readers/reader.tmp.<pid>.<n>...
// (a unique name), for as long as it reads. Counting lists those files and tries each one's
// lock: a held lock is a live reader; a free one belongs to a reader that died (flocks vanish with
// their process) - or to one that has created its file and not yet locked it, so a free file is
// removed only once it is older than any such gap could be.
//
// Thread-safety: free functions; a ReaderRegistration is a value owned by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <utility>
#include <vector>

#include "cache/cache_layout.h"
#include "cache/file_lock.h"
#include "ferry/result.h"

namespace ferry::internal_cache {

/// One reader, counted until destroyed.
class ReaderRegistration {
 public:
  ReaderRegistration() = default;
  ReaderRegistration(std::filesystem::path path, FileLock lock)
      : path_(std::move(path)), lock_(std::move(lock)) {}
  ReaderRegistration(ReaderRegistration&& other) noexcept = default;
  ReaderRegistration& operator=(ReaderRegistration&& other) noexcept;
  ~ReaderRegistration() { Unregister(); }

  bool registered() const { return lock_.held(); }

 private:
  void Unregister();

  std::filesystem::path path_;
  FileLock lock_;  // exclusive on path_
};

/// Counts the caller as a reader of the cache folder `layout` until the result is destroyed.
/// Creates the readers folder if needed.
Result<ReaderRegistration> RegisterReader(const CacheLayout& layout);

/// Readers of the cache folder now, this process's included; removes the files of dead ones
/// older than `stale_after`.
Result<uint32_t> CountReaders(const CacheLayout& layout,
                              std::chrono::seconds stale_after = std::chrono::seconds(10));

/// One reader of several cache folders (a streaming iterator over several streams): registered
/// in each, and counting the readers of all.
class FolderReaders {
 public:
  /// Registers in every folder it can; one it cannot write (read-only) leaves this reader
  /// uncounted there, and is not counted either (logged).
  explicit FolderReaders(const std::vector<std::filesystem::path>& folders);
  /// True when registered nowhere.
  bool empty() const { return folders_.empty(); }
  /// The most readers any of the folders has now (at least 1).
  uint32_t Most() const;

 private:
  std::vector<CacheLayout> folders_;
  std::vector<ReaderRegistration> registrations_;
};

}  // namespace ferry::internal_cache
