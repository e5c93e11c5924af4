// DigestRecord: what a shard file held when ferry wrote it - its size and XXH3-64 - kept in a
// small file of its own beside the shard's locks (CacheLayout::DigestPath), so that a power cut
// is caught exactly, on every filesystem, without flushing the download.
//
// Downloads are not fsynced (the flush halved epoch-1 throughput, and a cache can always fetch
// again). A file last changed before this boot may therefore hold anything the disk kept: its
// size and holes were the old checks, and only some filesystems report holes. With a record the
// check is the bytes themselves: such a file is read once and its digest compared, on its first
// use after the reboot (ShardCache's Examine), then the record notes the boot it was verified in
// so that later uses trust it. A file without a record (written by ferry before records
// existed) keeps the old checks.
//
// The record is written (to a temporary, renamed) before the shard file is renamed into place,
// so a published file always has its record; neither is flushed. A record that a power cut
// left empty or garbled makes the file it describes unverifiable, and it is fetched again: the
// safe direction. One lost altogether leaves the file the older checks (size and holes), as for
// a file written before records existed. Only the holder of the shard's download lock writes it.
//
// Format, one line of text (so that `cat` explains it):
//   ferry-digest 1 <bytes> xxh3 <16 hex digits>[ verified <boot id>]
//
// Thread-safety: functions are reentrant.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "ferry/result.h"

namespace ferry::internal_cache {

struct DigestRecord {
  uint64_t bytes = 0;
  uint64_t xxh3 = 0;
  std::string verified_boot;  // the BootId() of the boot the file was last verified in; or empty
};

/// The line a record holds.
std::string FormatDigestRecord(const DigestRecord& record);
/// The record in `text`; nullopt when it is not one (garbled, truncated, empty).
std::optional<DigestRecord> ParseDigestRecord(std::string_view text);

/// Writes `record` to `path` through `path`.tmp and a rename; not flushed (see the file comment).
Status WriteDigestRecord(const std::filesystem::path& path, const DigestRecord& record,
                         unsigned mode);

/// The record at `path`: nullopt when there is none (kNotFound is not an error here); kDataLoss
/// naming the path when the file is there but is not a record.
Result<std::optional<DigestRecord>> ReadDigestRecord(const std::filesystem::path& path);

/// Removes the record at `path`, and a temporary of it; a missing one is not an error.
void RemoveDigestRecord(const std::filesystem::path& path);

}  // namespace ferry::internal_cache
