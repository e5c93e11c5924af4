#include "cache/deletion_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/file_util.h"

namespace ferry::internal_cache {

namespace fs = std::filesystem;

Result<std::unique_ptr<DeletionWatch>> DeletionWatch::Start(const std::vector<fs::path>& folders) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    return ErrnoToStatus(errno, "inotify_init1 for", folders.empty() ? fs::path() : folders[0]);
  }
  std::map<int, fs::path> watched;
  for (const fs::path& folder : folders) {
    const int wd = ::inotify_add_watch(fd, folder.c_str(), IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR);
    if (wd < 0) {
      const int error = errno;
      ::close(fd);
      return ErrnoToStatus(error, "inotify_add_watch", folder);
    }
    watched[wd] = folder;
  }
  return std::unique_ptr<DeletionWatch>(new DeletionWatch(fd, std::move(watched)));
}

DeletionWatch::~DeletionWatch() { ::close(fd_); }

void DeletionWatch::Drain(const Callback& on_deleted) {
  std::unique_lock lock(drain_, std::try_to_lock);
  if (!lock) return;  // another thread is draining them
  // Room for many events at once; each is a header and a NUL-padded name.
  alignas(struct inotify_event) char buffer[16 * 1024];
  for (;;) {
    const ssize_t length = ::read(fd_, buffer, sizeof(buffer));
    if (length <= 0) return;  // EAGAIN: none left
    for (ssize_t at = 0; at < length;) {
      const auto* event = reinterpret_cast<const struct inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
      if (event->mask & IN_Q_OVERFLOW) {
        on_deleted(fs::path());
        continue;
      }
      if (!(event->mask & (IN_DELETE | IN_MOVED_FROM)) || (event->mask & IN_ISDIR) ||
          event->len == 0) {
        continue;
      }
      if (const auto folder = folders_.find(event->wd); folder != folders_.end()) {
        on_deleted(folder->second / event->name);
      }
    }
  }
}

}  // namespace ferry::internal_cache
