#include "cache/deletion_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <utility>

#include "base/file_util.h"
#include "base/mutex.h"

namespace ferry::internal_cache {

namespace fs = std::filesystem;

// The process's inotify instance and the watches that share it. Watches of one folder share its
// watch descriptor (inotify gives the same one), counted so that the last to end removes it.
struct DeletionWatch::Instance {
  explicit Instance(int descriptor) : fd(descriptor) {}
  ~Instance() {
    // In a forked child the descriptor is the parent's instance too: closing this copy of it
    // leaves the parent's watches alone.
    ::close(fd);
  }

  // Reads every queued event and hands each to the watches of its descriptor.
  void ReadEvents() REQUIRES(mu) {
    // Room for many events at once; each is a header and a NUL-padded name.
    alignas(struct inotify_event) char buffer[16 * 1024];
    for (;;) {
      const ssize_t length = ::read(fd, buffer, sizeof(buffer));
      if (length <= 0) return;  // EAGAIN: none left
      for (ssize_t at = 0; at < length;) {
        const auto* event = reinterpret_cast<const struct inotify_event*>(buffer + at);
        at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
        if (event->mask & IN_Q_OVERFLOW) {
          for (DeletionWatch* w : watches) w->lost_ = true;
          continue;
        }
        if (!(event->mask & (IN_DELETE | IN_MOVED_FROM)) || (event->mask & IN_ISDIR) ||
            event->len == 0) {
          continue;
        }
        for (DeletionWatch* w : watches) {
          const auto folder = w->folders_.find(event->wd);
          if (folder == w->folders_.end()) continue;
          if (w->queued_.size() < kMaxQueued) {
            w->queued_.push_back(folder->second / event->name);
          } else {
            w->lost_ = true;
          }
        }
      }
    }
  }

  const int fd;  // non-blocking
  Mutex mu;      // also held to read fd, and guards each watch's queued_ and lost_
  std::vector<DeletionWatch*> watches GUARDED_BY(mu);
  std::map<int, int> users GUARDED_BY(mu);  // watch descriptor -> watches using it
};

namespace {

// The live instance of this process, if any: a weak reference, so that it closes with its last
// watch. A forked child replaces the whole state, lock included (a thread of the parent may have
// held it at the fork); the parent's copy leaks, on purpose.
struct ProcessState {
  const pid_t pid = ::getpid();
  Mutex mu;
  std::weak_ptr<DeletionWatch::Instance> current GUARDED_BY(mu);
};
std::atomic<ProcessState*> process_state{nullptr};

ProcessState& State() {
  ProcessState* state = process_state.load();
  if (state == nullptr || state->pid != ::getpid()) {
    auto* fresh = new ProcessState();
    if (process_state.compare_exchange_strong(state, fresh)) return *fresh;
    delete fresh;  // another thread of this process won; `state` is its
  }
  return *state;
}

Result<std::shared_ptr<DeletionWatch::Instance>> SharedInstance(const fs::path& first) {
  ProcessState& state = State();
  MutexLock lock(state.mu);
  if (auto live = state.current.lock()) return live;
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "inotify_init1 for", first);
  auto made = std::make_shared<DeletionWatch::Instance>(fd);
  state.current = made;
  return made;
}

}  // namespace

Result<std::unique_ptr<DeletionWatch>> DeletionWatch::Start(const std::vector<fs::path>& folders) {
  FERRY_ASSIGN_OR_RETURN(std::shared_ptr<Instance> instance,
                         SharedInstance(folders.empty() ? fs::path() : folders[0]));
  MutexLock lock(instance->mu);
  std::map<int, fs::path> watched;
  const auto release = [&]() REQUIRES(instance->mu) {
    for (const auto& [wd, folder] : watched) {
      if (--instance->users[wd] == 0) {
        instance->users.erase(wd);
        ::inotify_rm_watch(instance->fd, wd);
      }
    }
  };
  for (const fs::path& folder : folders) {
    const int wd =
        ::inotify_add_watch(instance->fd, folder.c_str(), IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR);
    if (wd < 0) {
      const int error = errno;
      release();
      return ErrnoToStatus(error, "inotify_add_watch", folder);
    }
    if (watched.emplace(wd, folder).second) ++instance->users[wd];
  }
  // Events already queued belong to the watches before this one.
  instance->ReadEvents();
  std::unique_ptr<DeletionWatch> watch(new DeletionWatch(instance, std::move(watched)));
  instance->watches.push_back(watch.get());
  return watch;
}

DeletionWatch::~DeletionWatch() {
  MutexLock lock(instance_->mu);
  std::erase(instance_->watches, this);
  for (const auto& [wd, folder] : folders_) {
    if (--instance_->users[wd] == 0) {
      instance_->users.erase(wd);
      ::inotify_rm_watch(instance_->fd, wd);
    }
  }
}

void DeletionWatch::Drain(const Callback& on_deleted) {
  std::vector<fs::path> heard;
  bool lost = false;
  {
    // Another thread draining: what it hears for this watch waits here.
    if (!instance_->mu.try_lock()) return;
    instance_->ReadEvents();
    heard.swap(queued_);
    std::swap(lost, lost_);
    instance_->mu.unlock();
  }
  // Outside the lock: the callback may start or end watches.
  if (lost) on_deleted(fs::path());
  for (const fs::path& path : heard) on_deleted(path);
}

}  // namespace ferry::internal_cache
