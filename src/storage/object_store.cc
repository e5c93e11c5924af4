#include "ferry/storage/object_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "base/file_util.h"

namespace ferry {

std::string_view ChecksumName(ChecksumKind kind) {
  switch (kind) {
    case ChecksumKind::kNone:
      return "";
    case ChecksumKind::kMd5:
      return "MD5";
    case ChecksumKind::kCrc32:
      return "CRC32";
    case ChecksumKind::kCrc32c:
      return "CRC32C";
    case ChecksumKind::kCrc64Nvme:
      return "CRC64NVME";
  }
  return "";
}

std::string ObjectVersion(const ObjectInfo& info) {
  if (!info.etag.empty()) return info.etag;
  if (!info.mtime) return {};
  return fmt::format(
      "mtime:{}",
      std::chrono::duration_cast<std::chrono::nanoseconds>(info.mtime->time_since_epoch()).count());
}
namespace {

// Closes a descriptor when the last copy of a ByteSource that reads it goes away.
struct SharedFd {
  int fd;
  ~SharedFd() { ::close(fd); }
};

}  // namespace

ByteSource ByteSource::FromView(std::string_view data) {
  ByteSource source;
  source.size = data.size();
  source.read = [data](uint64_t offset, char* buffer, size_t size) -> Result<size_t> {
    if (offset >= data.size()) return size_t{0};
    const size_t n = std::min<uint64_t>(size, data.size() - offset);
    std::memcpy(buffer, data.data() + offset, n);
    return n;
  };
  return source;
}

Result<ByteSource> ByteSource::FromFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  std::shared_ptr<SharedFd> shared(new SharedFd{fd});  // no temporary: it would close fd
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) return ErrnoToStatus(errno, "seek", path);
  ByteSource source;
  source.size = static_cast<uint64_t>(size);
  source.read = [shared, path](uint64_t offset, char* buffer, size_t n) -> Result<size_t> {
    for (;;) {
      const ssize_t got = ::pread(shared->fd, buffer, n, static_cast<off_t>(offset));
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return ErrnoToStatus(errno, "read", path);
    }
  };
  return source;
}

namespace {

Status Stopped(const ObjectStore& store, std::string_view key) {
  return CancelledError(fmt::format("{}: stopped", store.ToUrl(key)));
}

// `sink`, ending the read at its next call once `stop` is requested (a remote store calls it at
// least once a second, also while no bytes come).
ByteSink StopAware(ByteSink sink, std::stop_token stop, const ObjectStore& store,
                   std::string_view key) {
  if (!stop.stop_possible()) return sink;
  return [sink = std::move(sink), stop, &store, key](std::string_view chunk) {
    return stop.stop_requested() ? Stopped(store, key) : sink(chunk);
  };
}

// `source`, ending the upload at its next read once `stop` is requested.
ByteSource StopAware(ByteSource source, std::stop_token stop, const ObjectStore& store,
                     std::string_view key) {
  if (!stop.stop_possible()) return source;
  source.read = [read = std::move(source.read), stop, &store, key](uint64_t offset, char* buffer,
                                                                   size_t size) -> Result<size_t> {
    if (stop.stop_requested()) return Stopped(store, key);
    return read(offset, buffer, size);
  };
  return source;
}

}  // namespace

Result<std::string> ObjectStore::Get(std::string_view key, std::stop_token stop) {
  std::string out;
  FERRY_RETURN_IF_ERROR(Read(key, ByteRange{},
                             StopAware(
                                 [&](std::string_view chunk) {
                                   out.append(chunk);
                                   return Status::Ok();
                                 },
                                 stop, *this, key))
                            .status());
  return out;
}

Result<std::string> ObjectStore::GetRange(std::string_view key, uint64_t offset, uint64_t length) {
  std::string out;
  if (length == 0) return out;
  out.reserve(length);
  FERRY_RETURN_IF_ERROR(Read(key, ByteRange{offset, length}, [&](std::string_view chunk) {
                          out.append(chunk);
                          return Status::Ok();
                        }).status());
  return out;
}

Result<ObjectInfo> ObjectStore::GetToFile(std::string_view key, const std::filesystem::path& path,
                                          std::stop_token stop) {
  FERRY_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  auto info =
      Read(key, ByteRange{},
           StopAware([&](std::string_view chunk) { return file.Write(chunk); }, stop, *this, key));
  if (!info) return info.status();
  FERRY_RETURN_IF_ERROR(file.Commit());
  info->key = std::string(key);
  return info;
}

Status ObjectStore::Put(std::string_view key, std::string_view data, std::stop_token stop) {
  return Write(key, StopAware(ByteSource::FromView(data), stop, *this, key));
}

Status ObjectStore::PutFile(std::string_view key, const std::filesystem::path& path,
                            std::stop_token stop) {
  FERRY_ASSIGN_OR_RETURN(ByteSource source, ByteSource::FromFile(path));
  return Write(key, StopAware(std::move(source), stop, *this, key));
}

}  // namespace ferry
