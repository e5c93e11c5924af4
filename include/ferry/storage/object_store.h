// ObjectStore: one interface over local folders, S3 (and S3-compatible stores), Azure Blob /
// ADLS, GCS and HTTP(S).
//
// A store is bound to one namespace (a bucket, a container, a host, the local filesystem);
// keys are '/'-separated paths inside it. OpenUrl (registry.h) turns a URL into the store and
// the key. Semantics every store follows (checked by the conformance suite in
// src/storage/testing/):
//   - Read streams an object, or a byte range of it, to a sink: a large object never sits whole
//     in memory. A transient failure in the middle resumes with a range request for the missing
//     bytes (pinned to the object's etag, so a replaced object is an error, not a splice).
//   - Write stores a whole object from a random-access source; large objects go up in parts, in
//     parallel, where the store supports it. Writes replace.
//   - List returns keys that start with `prefix` (a string prefix, as S3 has it), in key order;
//     with recursive = false, keys below the next '/' fold into common prefixes.
//   - A missing key is kNotFound naming the URL; a key that is a "folder" is not an object.
//   - Errors name the URL (redacted: no signature or token ever appears) and are classified so
//     that retry decisions come from the code alone (kUnavailable / kDeadlineExceeded).
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"

namespace ferry {

/// The algorithms of the whole-object checksums stores keep (src/storage/http/
/// store_checksum.h).
enum class ChecksumKind : uint8_t { kNone, kMd5, kCrc32, kCrc32c, kCrc64Nvme };

/// "MD5", "CRC32", "CRC32C", "CRC64NVME"; "" for kNone.
std::string_view ChecksumName(ChecksumKind kind);

/// A whole object's checksum, as a Read's response vouches for it, for free.
struct ObjectChecksum {
  ChecksumKind kind = ChecksumKind::kNone;
  std::string hex;   // lowercase; a CRC big-endian, as the stores send it (8 or 16 digits)
  std::string from;  // the header it came in: "ETag", "x-amz-checksum-crc64nvme", ...

  bool empty() const { return kind == ChecksumKind::kNone; }
  friend bool operator==(const ObjectChecksum&, const ObjectChecksum&) = default;
};

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // as the store reports it, without quotes; may be empty
  std::optional<std::chrono::system_clock::time_point> mtime;
  /// What a Read's response says the whole object's checksum is: an S3 ETag that is its MD5,
  /// x-amz-checksum-*, GCS's x-goog-hash, Azure's Content-MD5; empty when the store gives none.
  ObjectChecksum checksum;
  /// Which of several places served a Read (a MirrorStore's: the mirror's position,
  /// kSeveralSources when the read went on from another); empty for a store that is one place.
  std::string source;
};

/// ObjectInfo::source of a read whose bytes came from more than one place.
inline constexpr std::string_view kSeveralSources = "several";

/// What tells one version of an object from another, for change detection: its etag, or for
/// stores without one (local files) its modification time; empty when the store gives neither.
std::string ObjectVersion(const ObjectInfo& info);

struct ListResult {
  std::vector<ObjectInfo> objects;    // sorted by key
  std::vector<std::string> prefixes;  // with recursive = false: "dir/" entries, sorted
};

/// [offset, offset + length); length nullopt = to the end of the object.
struct ByteRange {
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

/// Receives object bytes in order. Returning an error stops the read with that error. Remote
/// stores also call it with an empty chunk at any time during the read (about once a second at
/// least, also while a connection stalls), so that a sink told to stop can end a read that
/// brings no bytes.
using ByteSink = std::function<Status(std::string_view chunk)>;

/// Random-access bytes to upload: read(offset, buffer, size) -> bytes written (0 at the end).
struct ByteSource {
  uint64_t size = 0;
  std::function<Result<size_t>(uint64_t offset, char* buffer, size_t size)> read;

  static ByteSource FromView(std::string_view data);  // caller keeps `data` alive
  /// A local file, read with pread (safe from several threads at once).
  static Result<ByteSource> FromFile(const std::filesystem::path& path);
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  /// "file", "s3", "az", "gs", "http", ...
  virtual std::string_view scheme() const = 0;
  /// True for stores that only read (http).
  virtual bool read_only() const { return false; }
  /// The URL of `key`; OpenUrl(ToUrl(key)) gives back this store's namespace and `key`.
  virtual std::string ToUrl(std::string_view key) const = 0;
  /// Where `key` lives on the local filesystem, for stores that are local (nullopt otherwise):
  /// lets copies read and write files directly instead of streaming.
  virtual std::optional<std::filesystem::path> LocalPath(std::string_view key) const {
    (void)key;
    return std::nullopt;
  }

  virtual Result<ObjectInfo> Head(std::string_view key) = 0;
  /// Streams `range` of the object to `sink`; returns the object's info (full size, etag).
  virtual Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) = 0;
  virtual Status Write(std::string_view key, const ByteSource& source) = 0;
  virtual Result<ListResult> List(std::string_view prefix, bool recursive) = 0;
  /// Removing a missing key is not an error (as in S3).
  virtual Status Remove(std::string_view key) = 0;

  // Conveniences built on the above. Those given a stop token end with kCancelled soon after a
  // stop is requested (at the next bytes a read brings, or within about a second while none
  // come; at the next part of an upload, whose multipart upload the store then aborts).

  /// The whole object in memory (use Read for large objects).
  Result<std::string> Get(std::string_view key, std::stop_token stop = {});
  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length);
  /// Downloads to `path` through a temporary file in the same folder, renamed into place only
  /// when complete: a failed or interrupted download never leaves a partial file at `path`.
  Result<ObjectInfo> GetToFile(std::string_view key, const std::filesystem::path& path,
                               std::stop_token stop = {});
  Status Put(std::string_view key, std::string_view data, std::stop_token stop = {});
  Status PutFile(std::string_view key, const std::filesystem::path& path,
                 std::stop_token stop = {});
};

}  // namespace ferry
