#include "cache/reader_registry.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <optional>
#include <string>

#include "base/file_util.h"
#include "base/log.h"

namespace ferry::internal_cache {
namespace {

constexpr std::string_view kPrefix = "reader.";

}  // namespace

ReaderRegistration& ReaderRegistration::operator=(ReaderRegistration&& other) noexcept {
  if (this != &other) {
    Unregister();
    path_ = std::move(other.path_);
    lock_ = std::move(other.lock_);
  }
  return *this;
}

void ReaderRegistration::Unregister() {
  if (!lock_.held()) return;
  // Removed while still locked: a counter never finds it free and takes it for a dead reader's.
  ::unlink(path_.c_str());
  lock_.Unlock();
}

Result<ReaderRegistration> RegisterReader(const CacheLayout& layout) {
  FERRY_RETURN_IF_ERROR(layout.CreateReadersDir());
  // A name of its own (pid, a per-process number, a counter): nobody else ever locks it.
  const std::filesystem::path path = TemporaryPathFor(layout.ReadersDir() / "reader");
  FERRY_ASSIGN_OR_RETURN(std::optional<FileLock> lock,
                         FileLock::TryLock(path, LockMode::kExclusive));
  if (!lock) return AbortedError(fmt::format("{}: locked by someone else", path.string()));
  return ReaderRegistration(path, std::move(*lock));
}

Result<uint32_t> CountReaders(const CacheLayout& layout, std::chrono::seconds stale_after) {
  uint32_t readers = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(layout.ReadersDir(), ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return readers;
    return ErrnoToStatus(ec.value(), "list", layout.ReadersDir());
  }
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return ErrnoToStatus(ec.value(), "list", layout.ReadersDir());
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

FolderReaders::FolderReaders(const std::vector<std::filesystem::path>& folders) {
  for (const auto& folder : folders) {
    CacheLayout layout(folder);
    auto registered = RegisterReader(layout);
    if (!registered) {
      Log().debug("cache: not counted as a reader of {}: {}", folder.string(),
                  registered.status().ToString());
      continue;
    }
    registrations_.push_back(std::move(*registered));
    folders_.push_back(std::move(layout));
  }
}

uint32_t FolderReaders::Most() const {
  uint32_t most = 1;
  for (const CacheLayout& layout : folders_) {
    if (auto readers = CountReaders(layout)) most = std::max(most, *readers);
  }
  return most;
}

}  // namespace ferry::internal_cache
