#include "cache/cached_copy.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <set>
#include <tuple>

#include "base/boot_time.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/mutex.h"
#include "cache/cache_metrics.h"
#include "cache/digest_record.h"
#include "cache/download_digest.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;

// A file as stat saw it: a file verified in this process is not read again while it stays the
// same (the note in its record may not be writable: a read-only folder, another user's, a full
// disk).
using FileIdentity = std::tuple<dev_t, ino_t, off_t, int64_t /*ctime ns*/>;

FileIdentity IdentityOf(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size,
          static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

struct VerifiedFiles {
  Mutex mu;
  std::set<FileIdentity> files GUARDED_BY(mu);
};

VerifiedFiles& Verified() {
  static VerifiedFiles* const verified = new VerifiedFiles;
  return *verified;
}

bool WasVerified(const struct stat& st) {
  VerifiedFiles& v = Verified();
  MutexLock lock(v.mu);
  return v.files.contains(IdentityOf(st));
}

void NoteVerified(const struct stat& st) {
  VerifiedFiles& v = Verified();
  MutexLock lock(v.mu);
  v.files.insert(IdentityOf(st));
}

// No record to go by (none kept, or none to be read now): the holes a power cut leaves in a file
// downloaded in parts. An error here (EMFILE, say) leaves the size check's verdict.
CachedCopy HoleCheck(const fs::path& path) {
  if (auto extent = StatFileExtent(path); extent && extent->first_hole < extent->size) {
    return {.damage = fmt::format(
                "{} has no data from byte {} on (written before the last boot, and lost before "
                "it reached the disk)",
                path.string(), extent->first_hole)};
  }
  return {.complete = true};
}

// A file from before the boot, of the right size, with its record: read it and compare.
CachedCopy Verify(const fs::path& path, const struct stat& st, const fs::path& record_path,
                  DigestRecord record) {
  auto digests = DigestFile(path, ChecksumKind::kNone);
  if (!digests) {
    // Not read now (EMFILE, EIO) is no verdict on its bytes: what the older checks say.
    Log().warn("cache: {}: not checked against its digest record: {}", path.string(),
               digests.status().message());
    return HoleCheck(path);
  }
  if (digests->xxh3 != record.xxh3) {
    return {.damage = fmt::format(
                "{} has XXH3 {:016x}, its digest record {:016x} (written before the last boot, "
                "and damaged before it reached the disk)",
                path.string(), digests->xxh3, record.xxh3)};
  }
  CacheMetrics::Get().reverified_files.Add();
  NoteVerified(st);
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
  if (FileTime(st.st_ctim) >= BootTime() || WasVerified(st)) return {.complete = true};
  const fs::path record_path = layout.DigestPath(file.basename);
  auto record = ReadDigestRecord(record_path);
  if (!record && record.status().code() == StatusCode::kDataLoss) {
    // Garbled (what a power cut may leave of it): nothing says what the file should hold.
    return {.damage = fmt::format("{}: {} (written before the last boot)", path.string(),
                                  record.status().message())};
  }
  if (!record) return HoleCheck(path);  // not readable now: no verdict on the file
  if (*record) {
    if ((*record)->bytes != size) {
      return {.damage = fmt::format("{} has {} bytes, its digest record {}", path.string(), size,
                                    (*record)->bytes)};
    }
    if ((*record)->verified_boot == BootId()) {
      NoteVerified(st);
      return {.complete = true};
    }
    if (!verify) return {.unverified = true};
    return Verify(path, st, record_path, std::move(**record));
  }
  return HoleCheck(path);  // no record: written by a ferry that kept none
}

}  // namespace

CachedCopy ExamineShard(const CacheLayout& layout, const ShardDescription& shard, bool verify) {
  bool unverified = false;
  for (const ShardFile& file : shard.files()) {
    CachedCopy copy = Examine(layout, *file.raw, verify);
    // Absent or damaged decides; an unverified file only once every other file is whole.
    if (copy.unverified) {
      unverified = true;
    } else if (!copy.complete) {
      return copy;
    }
  }
  if (unverified) return {.unverified = true};
  return {.complete = true};
}

}  // namespace ferry::internal_cache
