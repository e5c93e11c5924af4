#include "cache/reader_registry.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <string>

#include "base/file_util.h"

namespace ferry::internal_cache {
namespace {

constexpr std::string_view kPrefix = "reader.";

}  // namespace

ReaderRegistration& ReaderRegistration::operator=(ReaderRegistration&& other) noexcept {
  if (this != &other) {
    Unregister();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void ReaderRegistration::Unregister() {
  if (fd_ < 0) return;
  // Removed while still locked: a counter never finds it free and takes it for a dead reader's.
  ::unlink(path_.c_str());
  ::close(std::exchange(fd_, -1));
}

Result<ReaderRegistration> RegisterReader(const CacheLayout& layout) {
  FERRY_RETURN_IF_ERROR(layout.CreateLocksDir());
  FERRY_ASSIGN_OR_RETURN(TemporaryFile file,
                         CreateTemporaryFor(layout.LocksDir() / "reader", Modes().file));
  ReaderRegistration registration(file.path, file.fd);
  while (::flock(file.fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    return ErrnoToStatus(errno, "flock", file.path);
  }
  return registration;
}

Result<uint32_t> CountReaders(const CacheLayout& layout, std::chrono::seconds stale_after) {
  uint32_t readers = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(layout.LocksDir(), ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return readers;
    return ErrnoToStatus(ec.value(), "list", layout.LocksDir());
  }
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return ErrnoToStatus(ec.value(), "list", layout.LocksDir());
    const std::filesystem::path& path = it->path();
    if (!path.filename().string().starts_with(kPrefix)) continue;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // unregistered meanwhile
    int locked = -1;
    while ((locked = ::flock(fd, LOCK_SH | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (locked != 0) {
      ++readers;  // held: a live reader (EWOULDBLOCK) - or an error, counted to be safe
    } else {
      struct stat st {};
      if (::fstat(fd, &st) == 0 && std::time(nullptr) - st.st_mtime > stale_after.count()) {
        ::unlink(path.c_str());
      }
    }
    ::close(fd);
  }
  return readers;
}

}  // namespace ferry::internal_cache
