// WriteWithHole: what a power cut can leave of a file that was given its full size before its
// data was written (a download in ranged parts): the size is there, a range of the data is not.
// Test-only.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/file_util.h"

namespace ferry::testing {

/// Writes `contents` to `path` (replacing it) after allocating it at full size, except the
/// bytes in [hole_begin, hole_end), which stay unwritten: a hole. Both bounds must be multiples
/// of the filesystem block (4096) for the hole to show. False when a call fails.
inline bool WriteWithHole(const std::filesystem::path& path, std::string_view contents,
                          uint64_t hole_begin, uint64_t hole_end) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::posix_fallocate(fd, 0, static_cast<off_t>(contents.size())) == 0;
  auto write_range = [&](uint64_t begin, uint64_t end) {
    while (ok && begin < end) {
      const ssize_t n =
          ::pwrite(fd, contents.data() + begin, end - begin, static_cast<off_t>(begin));
      ok = n > 0;
      if (ok) begin += static_cast<uint64_t>(n);
    }
  };
  write_range(0, hole_begin);
  write_range(hole_end, contents.size());
  return ::close(fd) == 0 && ok;
}

/// Whether a hole at [hole_begin, hole_end) of a file of `size` bytes shows in StatFileExtent in
/// `folder` (a probe file, removed): not where the filesystem reports no holes (ZFS, NFS), nor
/// where it allocates in larger units than the hole (tmpfs with huge pages).
inline bool HoleShows(const std::filesystem::path& folder, uint64_t size, uint64_t hole_begin,
                      uint64_t hole_end) {
  const std::filesystem::path probe = folder / "hole-probe";
  const bool written = WriteWithHole(probe, std::string(size, 'p'), hole_begin, hole_end);
  const auto extent = StatFileExtent(probe);
  std::error_code ec;
  std::filesystem::remove(probe, ec);
  return written && extent && extent->first_hole == hole_begin;
}

}  // namespace ferry::testing
