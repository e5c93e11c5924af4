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

Result<std::string> ObjectStore::Get(std::string_view key) {
  std::string out;
  FERRY_RETURN_IF_ERROR(Read(key, ByteRange{}, [&](std::string_view chunk) {
                          out.append(chunk);
                          return Status::Ok();
                        }).status());
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

Result<ObjectInfo> ObjectStore::GetToFile(std::string_view key, const std::filesystem::path& path) {
  FERRY_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  auto info = Read(key, ByteRange{}, [&](std::string_view chunk) { return file.Write(chunk); });
  if (!info) return info.status();
  FERRY_RETURN_IF_ERROR(file.Commit());
  info->key = std::string(key);
  return info;
}

Status ObjectStore::Put(std::string_view key, std::string_view data) {
  return Write(key, ByteSource::FromView(data));
}

Status ObjectStore::PutFile(std::string_view key, const std::filesystem::path& path) {
  FERRY_ASSIGN_OR_RETURN(ByteSource source, ByteSource::FromFile(path));
  return Write(key, source);
}

}  // namespace ferry
