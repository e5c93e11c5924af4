// A read-only memory mapping of a whole file.
//
// Readers hand out views into the mapping instead of copies, so the mapping must outlive every
// view: MappedFile is move-only and unmaps in its destructor. An empty file maps to an empty
// span (mmap of length 0 is not allowed).
//
// Thread-safety: after Open, concurrent reads of data() are safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "ferry/result.h"

namespace ferry {

class MappedFile {
 public:
  static Result<MappedFile> Open(const std::filesystem::path& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view data() const { return {static_cast<const char*>(addr_), size_}; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  /// The inode mapped: which file `path` named when it was opened.
  uint64_t inode() const { return inode_; }

 private:
  MappedFile(void* addr, size_t size, std::filesystem::path path, uint64_t inode)
      : addr_(addr), size_(size), path_(std::move(path)), inode_(inode) {}
  void Reset();

  void* addr_ = nullptr;
  size_t size_ = 0;
  std::filesystem::path path_;
  uint64_t inode_ = 0;
};

}  // namespace ferry
