// TarWriter: a tar archive written member by member into a file that appears whole or not at all
// (AtomicFile). Members are regular files in POSIX ustar headers, with a PAX header before one
// whose name does not fit ustar's 100 + 155 bytes; what GNU tar, Python's tarfile (and so
// WebDataset) and ScanTar read. The archive ends with two zero blocks, padded to tar's
// 10240-byte record as GNU tar and tarfile pad theirs.
//
// Thread-safety: one thread per writer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "base/file_util.h"
#include "ferry/result.h"

namespace ferry::internal_format {

/// The header block(s) of a regular file `name` of `size` bytes, modified at `mtime` (seconds).
/// kInvalidArgument for an empty name or one with a NUL byte, or a size of 8 GiB or more.
Result<std::string> TarHeader(std::string_view name, uint64_t size, int64_t mtime = 0);

class TarWriter {
 public:
  static Result<TarWriter> Create(const std::filesystem::path& path);

  /// Appends the member `name` holding `data`.
  Status Add(std::string_view name, std::string_view data);
  /// Bytes of the archive so far, as it would be if it ended here (without its end blocks).
  uint64_t bytes() const { return bytes_; }
  /// Ends the archive and publishes the file; its size.
  Result<uint64_t> Finish();

 private:
  explicit TarWriter(AtomicFile file) : file_(std::move(file)) {}

  std::optional<AtomicFile> file_;
  uint64_t bytes_ = 0;
};

}  // namespace ferry::internal_format
