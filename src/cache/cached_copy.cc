#include "cache/cached_copy.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include "base/boot_time.h"
#include "base/file_util.h"
#include "base/log.h"
#include "cache/cache_metrics.h"
#include "cache/digest_record.h"
#include "cache/download_digest.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;

// A file from before the boot, of the right size, with its record: read it and compare.
CachedCopy Verify(const fs::path& path, const fs::path& record_path, DigestRecord record) {
  auto digests = DigestFile(path, /*md5=*/false);
  if (!digests) {
    return {.damage = fmt::format("{} cannot be read to check it: {}", path.string(),
                                  digests.status().message())};
  }
  if (digests->xxh3 != record.xxh3) {
    return {.damage = fmt::format(
                "{} has XXH3 {:016x}, its digest record {:016x} (written before the last boot, "
                "and damaged before it reached the disk)",
                path.string(), digests->xxh3, record.xxh3)};
  }
  CacheMetrics::Get().reverified_files.Add();
  record.verified_boot = BootId();
  // A folder we may not write (read-only, another user's) is verified again by the next process.
  if (Status s = WriteDigestRecord(record_path, record, Modes().file); !s.ok()) {
    Log().debug("cache: {}: verified, but not noted: {}", path.string(), s.message());
  }
  return {.complete = true};
}

CachedCopy Examine(const CacheLayout& layout, const FileInfo& file, bool verify) {
  const fs::path path = layout.FilePath(file.basename);
  struct stat st;
  // Anything but a regular file (or a failed stat) counts as absent, as it always did: the
  // download's rename replaces it, or fails naming the path.
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size != file.bytes) {
    return {.damage = fmt::format("{} has {} bytes, index.json says {}", path.string(), size,
                                  file.bytes)};
  }
  if (FileTime(st.st_ctim) >= BootTime()) return {.complete = true};
  const fs::path record_path = layout.DigestPath(file.basename);
  auto record = ReadDigestRecord(record_path);
  if (!record) {
    return {.damage = fmt::format("{}: {} (written before the last boot)", path.string(),
                                  record.status().message())};
  }
  if (*record) {
    if ((*record)->bytes != size) {
      return {.damage = fmt::format("{} has {} bytes, its digest record {}", path.string(), size,
                                    (*record)->bytes)};
    }
    if ((*record)->verified_boot == BootId()) return {.complete = true};
    if (!verify) return {.unverified = true};
    return Verify(path, record_path, std::move(**record));
  }
  // No record: the holes a power cut leaves in a file downloaded in parts. An error here
  // (EMFILE, say) leaves the size check's verdict.
  if (auto extent = StatFileExtent(path); extent && extent->first_hole < extent->size) {
    return {.damage = fmt::format(
                "{} has no data from byte {} on (written before the last boot, and lost before "
                "it reached the disk)",
                path.string(), extent->first_hole)};
  }
  return {.complete = true};
}

}  // namespace

CachedCopy ExamineShard(const CacheLayout& layout, const ShardDescription& shard, bool verify) {
  for (const ShardFile& file : shard.files()) {
    CachedCopy copy = Examine(layout, *file.raw, verify);
    if (!copy.complete) return copy;
  }
  return {.complete = true};
}

}  // namespace ferry::internal_cache
