#include "cache/shard_downloader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <stop_token>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "base/file_util.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/stoppable_sleep.h"
#include "cache/cache_metrics.h"
#include "cache/digest_record.h"
#include "cache/download_digest.h"
#include "cache/download_progress.h"
#include "format/compression.h"
#include "format/hash.h"
#include "storage/http/http_types.h"
#include "storage/http/resumable_get.h"
#include "storage/object_key.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;

// A whole body up to this size is digested after it has landed, not followed by a thread.
constexpr uint64_t kFollowAbove = uint64_t{1} << 20;

// A download that arrives wrong - the wrong size, another range than asked, a digest that
// disagrees, an object that changed while it was read (412 to a resume) - is fetched again, up to
// this many times in all: what broke on the way, or a server's lie, seldom breaks the same way
// twice. Two downloads the store vouched for (whole, with its ETag: DownloadToFile) that fail in
// the same words - the same wrong bytes, or the same wrong size - are the object itself, not the
// way, and end it at once: a corrupt object, or one of another size than index.json's, costs two.
// Between attempts a pause that doubles from kRedownloadPause (1.55 s in all before the sixth):
// trouble on the way comes in bursts - a flaky hop, a proxy restarting - and a retry at once
// lands in the same one.
constexpr int kDownloadAttempts = 6;
constexpr std::chrono::milliseconds kRedownloadPause{50};

// Removes a temporary on scope exit unless it was published (renamed) or handed on.
class TemporaryGuard {
 public:
  explicit TemporaryGuard(fs::path path) : path_(std::move(path)) {}
  ~TemporaryGuard() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TemporaryGuard(const TemporaryGuard&) = delete;
  TemporaryGuard& operator=(const TemporaryGuard&) = delete;
  void Dismiss() { path_.clear(); }

 private:
  fs::path path_;
};

Status RemoveIfExists(const fs::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoToStatus(errno, "unlink", path);
  return Status::Ok();
}

// Creates the folder of `path` and checks that it really lies inside the cache folder: a
// basename is a safe relative path (ParseIndex checks), but one of its folders could be a
// symlink planted in the cache folder, and nothing may be written - or removed - through it.
Status CreateParentFolder(const CacheLayout& layout, const fs::path& path) {
  FERRY_RETURN_IF_ERROR(CreateCacheFolders(path.parent_path()));
  std::error_code ec;
  const fs::path root = fs::canonical(layout.root(), ec);
  if (ec) return ErrnoToStatus(ec.value(), "resolve", layout.root());
  const fs::path folder = fs::canonical(path.parent_path(), ec);
  if (ec) return ErrnoToStatus(ec.value(), "resolve", path.parent_path());
  const auto [root_end, _] = std::mismatch(root.begin(), root.end(), folder.begin(), folder.end());
  if (root_end != root.end()) {
    return PermissionDeniedError(fmt::format(
        "{}: its folder leads outside the cache folder {} (through a symlink, to {}); ferry "
        "writes nothing there",
        path.string(), layout.root().string(), folder.string()));
  }
  return Status::Ok();
}

Status PwriteAll(int fd, std::string_view data, uint64_t offset, const fs::path& path) {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// Writes a new file. Not flushed, as downloads are not: see Examine in shard_cache.cc.
Status WriteNewFile(const fs::path& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, Modes().file);
  if (fd < 0) return ErrnoToStatus(errno, "create", path);
  Status status = PwriteAll(fd, data, 0, path);
  if (::close(fd) != 0 && status.ok()) status = ErrnoToStatus(errno, "close", path);
  if (!status.ok()) ::unlink(path.c_str());
  return status;
}

// Neither the file nor the folder is fsynced: what a power cut takes of a file is found by its
// digest record - or, for a file without one, by its size and holes - and fetched again
// (src/cache/cached_copy.h, docs/streaming.md "Publishing").
Status Publish(const fs::path& tmp, const fs::path& path) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoToStatus(errno, "rename", path);
  return Status::Ok();
}

// `tuner` (may be null) measures the body.
// What a download returns when its reader has gone away.
Status Stopped(const std::string& url) {
  return CancelledError(fmt::format("{}: download stopped: nobody waits for it any more", url));
}

Result<ObjectInfo> DownloadWhole(ObjectStore& store, std::string_view key, int fd,
                                 const fs::path& tmp, uint64_t expected_size,
                                 const std::string& url, PartTuner* tuner,
                                 DownloadProgressWriter* progress, DownloadDigest* digest,
                                 std::stop_token stop, bool& vouched) {
  metrics::Counter& downloaded = CacheMetrics::Get().downloaded_bytes;
  uint64_t written = 0;
  PartTuner::Body body = tuner != nullptr ? tuner->Track() : PartTuner::Body();
  auto info = store.Read(key, ByteRange{}, [&](std::string_view chunk) -> Status {
    body.Received(chunk.size());
    if (stop.stop_requested()) return Stopped(url);
    // Stop at once rather than fill the disk with an object bigger than announced.
    if (chunk.size() > expected_size - written) {
      return DataLossError(
          fmt::format("{}: larger than the {} bytes index.json gives", url, expected_size));
    }
    FERRY_RETURN_IF_ERROR(PwriteAll(fd, chunk, written, tmp));
    written += chunk.size();
    if (progress != nullptr) progress->Landed(0, written);
    if (digest != nullptr) digest->Landed(0, written);
    downloaded.Add(chunk.size());
    return Status::Ok();
  });
  if (!info) return info.status();
  // The store's reply ended as its Content-Length said, with the object's ETag: its word (an
  // HTML page in the way has no ETag).
  vouched = !info->etag.empty();
  if (written != expected_size) {
    return DataLossError(
        fmt::format("{}: {} bytes, index.json says {}", url, written, expected_size));
  }
  body.Finish();
  return info;
}

// [0, size) split into at most `max_parts` parts of equal size (the last one shorter).
std::vector<DownloadPart> SplitIntoParts(uint64_t size, uint32_t max_parts) {
  const uint64_t parts = std::max<uint64_t>(1, std::min<uint64_t>(max_parts, size));
  const uint64_t part_size = (size + parts - 1) / parts;
  std::vector<DownloadPart> out;
  for (uint64_t begin = 0; begin < size || out.empty(); begin += part_size) {
    out.push_back({begin, std::min(size, begin + part_size)});
    if (part_size == 0) break;
  }
  return out;
}

Result<ObjectInfo> DownloadParts(ObjectStore& store, std::string_view key, int fd,
                                 const fs::path& tmp, uint64_t size,
                                 const std::vector<DownloadPart>& ranges, const std::string& url,
                                 PartTuner* tuner, DownloadProgressWriter* progress,
                                 DownloadDigest* digest, std::stop_token stop, bool& vouched) {
  // Parts land out of order: reserving every block now also makes a full disk fail here, not
  // halfway through. Where the filesystem has no fallocate, glibc writes zeros instead (and the
  // ftruncate below is for C libraries that say EOPNOTSUPP).
  if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(size)); err != 0) {
    if (err != EOPNOTSUPP && err != EINVAL) return ErrnoToStatus(err, "allocate", tmp);
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      return ErrnoToStatus(errno, "truncate", tmp);
    }
  }
  const size_t parts = ranges.size();
  metrics::Counter& downloaded = CacheMetrics::Get().downloaded_bytes;
  std::stop_source failed;  // the first failing part stops the others
  std::vector<Status> results(parts);
  // What each part's response says of the whole object: checked afterwards, instead of a HEAD
  // first that would cost a round trip per shard.
  std::vector<std::optional<ObjectInfo>> objects(parts);  // nullopt: a part past the end
  auto run_part = [&](size_t part) {
    const uint64_t begin = ranges[part].begin;
    const uint64_t length = ranges[part].end - begin;
    uint64_t written = 0;
    PartTuner::Body body = tuner != nullptr ? tuner->Track() : PartTuner::Body();
    auto got = store.Read(key, ByteRange{begin, length}, [&](std::string_view chunk) -> Status {
      body.Received(chunk.size());
      if (stop.stop_requested()) return Stopped(url);
      if (failed.stop_requested()) {
        return CancelledError(fmt::format("{}: another part of the download failed", url));
      }
      if (chunk.size() > length - written) {
        return DataLossError(
            fmt::format("{}: more than the {} bytes asked for at offset {}", url, length, begin));
      }
      FERRY_RETURN_IF_ERROR(PwriteAll(fd, chunk, begin + written, tmp));
      written += chunk.size();
      if (progress != nullptr) progress->Landed(static_cast<uint32_t>(part), begin + written);
      if (digest != nullptr) digest->Landed(static_cast<uint32_t>(part), begin + written);
      downloaded.Add(chunk.size());
      return Status::Ok();
    });
    Status status = got.status();
    if (got) objects[part] = *got;
    if (status.ok() && written != length) {
      status = DataLossError(
          fmt::format("{}: {} bytes at offset {}, expected {}", url, written, begin, length));
    }
    if (status.ok()) body.Finish();
    if (!status.ok()) failed.request_stop();
    results[part] = std::move(status);
  };
  try {
    std::vector<std::jthread> threads;
    threads.reserve(parts - 1);
    for (size_t part = 1; part < parts; ++part) threads.emplace_back(run_part, part);
    run_part(0);
  } catch (const std::system_error& e) {  // no thread to be had; those started were joined
    failed.request_stop();
    return ResourceExhaustedError(
        fmt::format("{}: cannot start download threads: {}", url, e.what()));
  }
  // Report the failure itself, not the cancellations it caused.
  for (Status& status : results) {
    if (!status.ok() && status.code() != StatusCode::kCancelled) return std::move(status);
  }
  for (Status& status : results) {
    if (!status.ok()) return std::move(status);
  }
  const ObjectInfo* first = nullptr;
  bool mixed_checksums = false;
  bool mixed_sources = false;
  for (const auto& part : objects) {
    if (!part) continue;
    const ObjectInfo& object = *part;
    if (first == nullptr) first = &object;
    if (object.size != size) {
      vouched = !object.etag.empty();  // every part's reply named the object's size
      return DataLossError(fmt::format("{}: {} bytes, index.json says {}", url, object.size, size));
    }
    // Parts of two versions of an object (rewritten during the download) must not be mixed.
    if (object.etag != first->etag) {
      return DataLossError(fmt::format("{}: changed during the download (etag {} then {})", url,
                                       first->etag, object.etag));
    }
    if (object.checksum != first->checksum) mixed_checksums = true;
    if (object.source != first->source) mixed_sources = true;
  }
  if (first == nullptr) return ObjectInfo{.size = size};
  vouched = !first->etag.empty();
  ObjectInfo out = *first;
  // One version, parts that say different checksums (a proxy that drops a header on some
  // replies): believe none of them.
  if (mixed_checksums) out.checksum = {};
  if (mixed_sources) out.source = kSeveralSources;
  return out;
}

}  // namespace

Status CheckDownloadParts(uint32_t parts) {
  if (parts >= 1 && parts <= kMaxDownloadParts) return Status::Ok();
  return InvalidArgumentError(fmt::format("download_parts must be 1 to {} (or unset: auto), not {}",
                                          kMaxDownloadParts, parts));
}

Result<DownloadedFile> DownloadToFile(ObjectStore& store, std::string_view key, const fs::path& tmp,
                                      uint64_t expected_size, const PartOptions& parts,
                                      std::stop_token stop, const fs::path& progress_record,
                                      DownloadChecks checks, bool* vouched) {
  bool vouched_here = false;
  if (vouched == nullptr) vouched = &vouched_here;
  *vouched = false;
  const std::string url = http::RedactUrl(store.ToUrl(key));
  if (stop.stop_requested()) return Stopped(url);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, Modes().file);
  if (fd < 0) return ErrnoToStatus(errno, "create", tmp);
  const bool large = expected_size > 0 && expected_size >= parts.parallel_part_threshold;
  const uint32_t count = parts.tuner != nullptr ? parts.tuner->parts() : parts.download_parts;
  PartTuner* const tuner = large ? parts.tuner : nullptr;  // small bodies measure TCP's start
  const bool ranged = large && count > 1;
  const std::vector<DownloadPart> ranges =
      ranged ? SplitIntoParts(expected_size, count) : std::vector<DownloadPart>{{0, expected_size}};
  std::unique_ptr<DownloadProgressWriter> progress;
  if (!progress_record.empty()) {
    auto created = DownloadProgressWriter::Create(progress_record, fd, expected_size, ranges);
    if (created) {
      progress = std::move(*created);
    } else {  // readers wait for the whole file instead
      Log().debug("cache: no progress record for {}: {}", url, created.status().message());
    }
  }
  std::unique_ptr<DownloadDigest> digest;
  const bool digests = checks.digest || checks.store_checksum;
  // A small whole body is digested once it has landed, below: a thread to follow it would cost
  // more than the digest.
  if (digests && (ranged || expected_size > kFollowAbove)) {
    auto started = DownloadDigest::Start(tmp, ranges,
                                         !checks.store_checksum ? ChecksumKind::kNone
                                         : ranged               ? checks.expected_ranged
                                                                : checks.expected_whole);
    if (started) {
      digest = std::move(*started);
    } else {  // published without a digest record: the size and hole checks remain
      Log().warn("cache: {}: no digest: {}", url, started.status().message());
    }
  }
  Result<ObjectInfo> object =
      ranged ? DownloadParts(store, key, fd, tmp, expected_size, ranges, url, tuner, progress.get(),
                             digest.get(), stop, *vouched)
             : DownloadWhole(store, key, fd, tmp, expected_size, url, tuner, progress.get(),
                             digest.get(), stop, *vouched);
  Status status = object.status();
  if (progress) progress->Finish(status.ok());
  if (::close(fd) != 0 && status.ok()) status = ErrnoToStatus(errno, "close", tmp);
  DownloadedFile out;
  out.ranged = ranged;
  if (status.ok()) {
    out.store_checksum = object->checksum;
    out.source = object->source;
    const ChecksumKind want = checks.store_checksum ? out.store_checksum.kind : ChecksumKind::kNone;
    Result<FileDigests> digested = digest    ? digest->Finish(want)
                                   : digests ? DigestFile(tmp, want)
                                             : Result<FileDigests>(FileDigests{});
    if (digested) {
      if (digests) out.digests = *digested;
    } else {
      status = digested.status();
    }
  }
  digest.reset();  // its descriptor goes before the file does
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return out;
}

ShardDownloader::ShardDownloader(std::shared_ptr<ObjectStore> remote, std::string remote_prefix,
                                 CacheLayout layout, ShardDownloaderOptions options)
    : remote_(std::move(remote)),
      remote_prefix_(std::move(remote_prefix)),
      layout_(std::move(layout)),
      options_(std::move(options)) {}

std::string ShardDownloader::RemoteKey(std::string_view basename) const {
  return JoinKey(remote_prefix_, basename);
}

Status ShardDownloader::CheckDigest(std::string_view data, const FileInfo& file,
                                    std::string_view origin) const {
  if (!options_.validate_hash) return Status::Ok();
  const std::string& algorithm = *options_.validate_hash;
  const std::string* want = file.FindHash(algorithm);
  if (want == nullptr) {
    return InvalidArgumentError(fmt::format(
        "{}: validate_hash {} is not among its digests in index.json", file.basename, algorithm));
  }
  FERRY_ASSIGN_OR_RETURN(const std::string got, HashHex(algorithm, data));
  if (got != *want) {
    CacheMetrics::Get().hash_failures.Add();
    return DataLossError(fmt::format("{}: {} digest {} of {} does not match index.json's {}",
                                     file.basename, algorithm, got, origin, *want));
  }
  return Status::Ok();
}

namespace {

// Decompresses `zip` (the contents of file.zip) into the raw file's temporary.
Result<FileDigests> WriteRawFromZip(const ShardDescription& shard, const ShardFile& file,
                                    std::string_view zip, const fs::path& raw_tmp) {
  if (shard.config == nullptr || !shard.config->compression) {
    return InvalidArgumentError(fmt::format(
        "{}: index.json lists a compressed file but no compression", file.zip->basename));
  }
  FERRY_ASSIGN_OR_RETURN(const Compression compression,
                         Compression::Parse(*shard.config->compression));
  auto raw = compression.Decompress(zip, file.raw->bytes);
  if (!raw) return raw.status().WithContext(file.zip->basename);
  if (raw->size() != file.raw->bytes) {
    return DataLossError(fmt::format("{}: decompresses to {} bytes, index.json says {}",
                                     file.zip->basename, raw->size(), file.raw->bytes));
  }
  FERRY_RETURN_IF_ERROR(WriteNewFile(raw_tmp, *raw));
  return DigestOf(*raw, ChecksumKind::kNone);
}

}  // namespace

Status ShardDownloader::DecompressLocalZip(const ShardDescription& shard,
                                           const ShardFile& file) const {
  const fs::path zip_path = layout_.FilePath(file.zip->basename);
  const fs::path raw_tmp = layout_.TemporaryPath(file.raw->basename);
  std::optional<FileDigests> digests;
  {
    FERRY_ASSIGN_OR_RETURN(const MappedFile zip, MappedFile::Open(zip_path));
    FERRY_RETURN_IF_ERROR(CheckDigest(zip.data(), *file.zip, zip_path.string()));
    FERRY_ASSIGN_OR_RETURN(digests, WriteRawFromZip(shard, file, zip.data(), raw_tmp));
  }
  TemporaryGuard raw_guard(raw_tmp);
  // A local dataset's folder gets no records: nothing in it is ever fetched again.
  if (!remote_) digests.reset();
  FERRY_RETURN_IF_ERROR(PublishRaw(raw_tmp, file.raw->basename, digests));
  raw_guard.Dismiss();
  Log().debug("cache: decompressed {} in {}", file.zip->basename, layout_.root().string());
  return Status::Ok();
}

Status ShardDownloader::PublishRaw(const fs::path& tmp, std::string_view basename,
                                   const std::optional<FileDigests>& digests) const {
  const fs::path record = layout_.DigestPath(basename);
  if (options_.digest_records && digests) {
    // Before the file: a published file always has its record (digest_record.h).
    FERRY_RETURN_IF_ERROR(
        WriteDigestRecord(record, {.bytes = digests->bytes, .xxh3 = digests->xxh3}, Modes().file));
  } else {
    RemoveDigestRecord(record);  // one of an earlier copy would not describe this one
  }
  return Publish(tmp, layout_.FilePath(basename));
}

Status ShardDownloader::CheckStoreChecksum(const DownloadedFile& got, const std::string& url,
                                           bool expected, Attempts& attempts) const {
  if (!got.digests) return Status::Ok();
  const ObjectChecksum& sent = got.store_checksum;
  if (sent.empty()) {
    if (!expected && !attempts.unchecked) return Status::Ok();
    // The store's replies have carried a checksum, and this one came without (or in a form
    // that is not one): a header damaged on the way looks just so, and the body may be too. Two
    // downloads that bring the same bytes stand for each other; a multipart object (no MD5 in
    // its ETag) among single-part ones costs one more download.
    if (attempts.unchecked == got.digests->xxh3) return Status::Ok();
    attempts.unchecked = got.digests->xxh3;
    CacheMetrics::Get().checksum_failures.Add();
    return DataLossError(fmt::format(
        "{}: came without the checksum the store's replies carry (a damaged ETag, Content-MD5 "
        "or x-amz-checksum?), its bytes' XXH3 {:016x}: downloaded again to compare",
        url, got.digests->xxh3));
  }
  if (got.digests->checksum_kind != sent.kind) return Status::Ok();  // not computed
  const std::string_view algorithm = ChecksumName(sent.kind);
  std::optional<uint64_t>& mismatched = attempts.mismatched;
  CacheMetrics& metrics = CacheMetrics::Get();
  if (got.digests->checksum == sent.hex) {
    metrics.checksummed_downloads.Add();
    return Status::Ok();
  }
  if (mismatched == got.digests->xxh3) {
    // The same bytes twice, and not the ones the checksum describes: a damaged body would not
    // come back identical, so the checksum is what is wrong (an ETag that only looks like an
    // MD5, a Content-MD5 set wrong by the uploader). Not checked again for this dataset.
    if (!checksum_untrusted_.exchange(true)) {
      Log().warn(
          "cache: {}: two downloads brought the same bytes, whose {} {} is not the {} {} the "
          "store sends: that header is not this object's {}, and is not checked any more for "
          "this dataset (validate_hash checks against index.json)",
          url, algorithm, got.digests->checksum, sent.from, sent.hex, algorithm);
    }
    return Status::Ok();
  }
  mismatched = got.digests->xxh3;
  metrics.checksum_failures.Add();
  return DataLossError(fmt::format(
      "{}: the bytes received have {} {}, but the store sent {} {} with them (damaged on the way)",
      url, algorithm, got.digests->checksum, sent.from, sent.hex));
}

Status ShardDownloader::DownloadOnce(const ShardDescription& shard, const ShardFile& file,
                                     const MakeRoomFn& make_room, std::stop_token stop,
                                     Attempts& attempts, bool& arrived) const {
  arrived = false;
  const FileInfo& fetched = file.zip ? *file.zip : *file.raw;
  // A compressed file peaks at both forms while it is decompressed.
  FERRY_RETURN_IF_ERROR(make_room(fetched.bytes + (file.zip ? file.raw->bytes : 0)));
  const std::string key = RemoteKey(fetched.basename);
  const std::string url = http::RedactUrl(remote_->ToUrl(key));
  const fs::path tmp = layout_.TemporaryPath(fetched.basename);
  Log().debug("cache: downloading {} ({} bytes) into {}", url, fetched.bytes,
              layout_.root().string());
  CacheMetrics::Get().downloads.Add();
  // Readers may serve samples of a raw file from the bytes that have landed; not of a compressed
  // one, nor of bytes validate_hash must check first.
  const fs::path progress =
      file.zip || options_.validate_hash ? fs::path() : layout_.ProgressPath(fetched.basename);
  const bool check_checksum =
      options_.store_checksums && !options_.validate_hash && !checksum_untrusted_.load();
  const DownloadChecks checks = {
      // A compressed file's raw form is digested as it is written, from memory.
      .digest = options_.digest_records && !file.zip,
      .store_checksum = check_checksum,
      .expected_whole = expected_whole_.load(std::memory_order_relaxed),
      .expected_ranged = expected_ranged_.load(std::memory_order_relaxed)};
  FERRY_ASSIGN_OR_RETURN(const DownloadedFile got,
                         DownloadToFile(*remote_, key, tmp, fetched.bytes, options_.parts, stop,
                                        progress, checks, &arrived));
  TemporaryGuard guard(tmp);
  arrived = true;  // whole, at index.json's size: its digests are the bytes' own
  (got.ranged ? expected_ranged_ : expected_whole_)
      .store(got.store_checksum.kind, std::memory_order_relaxed);
  // Whether replies of this one's shape and source have carried a checksum. Not of one that
  // came from several mirrors: its checksum is dropped whatever they sent.
  bool seen = got.source != kSeveralSources;
  if (seen) {
    const std::string shape = fmt::format("{} {}", got.ranged ? "ranged" : "whole", got.source);
    MutexLock lock(seen_mu_);
    if (got.store_checksum.empty()) {
      seen = checksum_seen_.contains(shape);
    } else {
      checksum_seen_.insert(shape);
    }
  }
  // validate_hash checks against index.json, which outranks the store's word: with it, the
  // store's checksum is not asked.
  if (check_checksum) FERRY_RETURN_IF_ERROR(CheckStoreChecksum(got, url, seen, attempts));
  if (!file.zip) {
    if (options_.validate_hash) {
      FERRY_ASSIGN_OR_RETURN(const MappedFile downloaded, MappedFile::Open(tmp));
      FERRY_RETURN_IF_ERROR(CheckDigest(downloaded.data(), fetched, url));
    }
    FERRY_RETURN_IF_ERROR(PublishRaw(tmp, fetched.basename, got.digests));
    guard.Dismiss();
    return Status::Ok();
  }
  const fs::path raw_tmp = layout_.TemporaryPath(file.raw->basename);
  std::optional<FileDigests> raw_digests;
  {
    FERRY_ASSIGN_OR_RETURN(const MappedFile downloaded, MappedFile::Open(tmp));
    FERRY_RETURN_IF_ERROR(CheckDigest(downloaded.data(), fetched, url));
    FERRY_ASSIGN_OR_RETURN(raw_digests, WriteRawFromZip(shard, file, downloaded.data(), raw_tmp));
  }
  TemporaryGuard raw_guard(raw_tmp);
  // The zip goes first: a crash between the two renames leaves it and no raw file, which the next
  // Acquire decompresses - a temporary is never left beside a published raw file.
  if (KeepZip(fetched.basename)) {
    FERRY_RETURN_IF_ERROR(Publish(tmp, layout_.FilePath(fetched.basename)));
    guard.Dismiss();
  } else {
    FERRY_RETURN_IF_ERROR(RemoveIfExists(tmp));
    guard.Dismiss();
  }
  FERRY_RETURN_IF_ERROR(PublishRaw(raw_tmp, file.raw->basename, raw_digests));
  raw_guard.Dismiss();
  return Status::Ok();
}

Status ShardDownloader::Fetch(const ShardDescription& shard, const MakeRoomFn& make_room,
                              std::stop_token stop) const {
  for (const ShardFile& file : shard.files()) {
    FERRY_RETURN_IF_ERROR(FetchFile(shard, file, make_room, stop));
  }
  return Status::Ok();
}

Status ShardDownloader::FetchFile(const ShardDescription& shard, const ShardFile& file,
                                  const MakeRoomFn& make_room, std::stop_token stop) const {
  const fs::path raw_path = layout_.FilePath(file.raw->basename);
  FERRY_RETURN_IF_ERROR(CreateParentFolder(layout_, raw_path));
  // Leftovers of a download that was killed: the download lock is ours, so nobody writes them.
  FERRY_RETURN_IF_ERROR(RemoveIfExists(layout_.TemporaryPath(file.raw->basename)));
  if (file.zip) {
    const fs::path zip_path = layout_.FilePath(file.zip->basename);
    FERRY_RETURN_IF_ERROR(CreateParentFolder(layout_, zip_path));
    FERRY_RETURN_IF_ERROR(RemoveIfExists(layout_.TemporaryPath(file.zip->basename)));
    if (IsRegularFile(zip_path)) {
      if (remote_) FERRY_RETURN_IF_ERROR(make_room(file.raw->bytes));
      Status local = DecompressLocalZip(shard, file);
      if (local.ok()) {
        if (remote_ && !KeepZip(file.zip->basename)) {
          if (Status s = RemoveIfExists(zip_path); !s.ok()) Log().warn("cache: {}", s.message());
        }
        return Status::Ok();
      }
      // A local dataset is never modified; a corrupt cached zip is replaced by a fresh copy.
      if (!remote_ || local.code() != StatusCode::kDataLoss) return local;
      Log().info("cache: downloading again: {}", local.message());
      FERRY_RETURN_IF_ERROR(RemoveIfExists(zip_path));
    }
  }
  if (!remote_) {
    return NotFoundError(
        fmt::format("{}: not in the local dataset (nor its compressed form)", raw_path.string()));
  }
  Status status;
  Attempts attempts;
  std::string previous;  // the last vouched-for download's failure, in words
  int attempt = 1;
  for (;; ++attempt) {
    bool arrived = false;
    status = DownloadOnce(shard, file, make_room, stop, attempts, arrived);
    if (status.code() == StatusCode::kNotFound) {
      // The index was current when the dataset was opened (cached_index.h): the remote dataset
      // changed since.
      return NotFoundError(fmt::format(
          "{} (index.json names this shard but the remote does not have it: the dataset changed "
          "after it was opened - open it again to read its current index - or its index lists "
          "shards that were never uploaded)",
          status.message()));
    }
    if (status.code() != StatusCode::kDataLoss && !http::IsObjectChanged(status)) return status;
    if (attempt == kDownloadAttempts || (arrived && status.message() == previous)) break;
    previous = arrived ? status.message() : std::string();
    Log().info("cache: downloading again: {}", status.message());
    if (!SleepUnlessStopped(kRedownloadPause * (1 << (attempt - 1)), stop)) {
      return Stopped(http::RedactUrl(remote_->ToUrl(RemoteKey(file.raw->basename))));
    }
  }
  return DataLossError(fmt::format("{} (downloaded {} times)", status.message(), attempt));
}

}  // namespace ferry::internal_cache
