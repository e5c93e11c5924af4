// ScanTar: the regular files of a tar archive held in memory, with where each one's bytes are,
// so that a shard can be indexed once and its members read later by offset.
//
// Reads POSIX ustar, old GNU and PAX archives as Python's tarfile (and so WebDataset) does: a
// member's name is its PAX `path`, else a preceding GNU long name ('L'), else the ustar prefix
// joined to the name; a PAX `size` overrides the header's; sizes may be octal or GNU base-256.
// Directories, links, devices and FIFOs are skipped. The archive ends at two zero blocks or at
// its last whole member. A header whose checksum does not match, a member running past the end,
// or a malformed PAX record is kDataLoss naming the archive and the byte offset.
//
// Thread-safety: a free function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry::internal_format {

/// A tar archive is made of 512-byte blocks: headers, and data padded to a whole block.
inline constexpr uint64_t kTarBlock = 512;

struct TarMember {
  std::string name;
  uint64_t offset = 0;  // of its first data byte in the archive
  uint64_t size = 0;
};

/// The regular files of `archive`, in archive order. `name` (the shard's) is for errors only.
Result<std::vector<TarMember>> ScanTar(std::string_view archive, std::string_view name);

}  // namespace ferry::internal_format
