// DeletionWatch: hears of files deleted from (or renamed out of) a set of folders while a
// process reads them. A reader keeps a shard it has opened mapped; when someone removes the file
// from the cache folder under it (a user clearing space, another job), the mapping still reads
// the old bytes and nothing would ever fetch the file again. Told of the deletion, the reader
// drops the mapping and fetches the shard again when it next needs it - as Mosaic Streaming
// does, which reads each sample from the file.
//
// Linux inotify, with no thread of its own: the kernel queues the events, and the readers drain
// them when they choose (Drain: one non-blocking read, a few hundred nanoseconds when there are
// none), so that a deletion is heard at the reader's next drain, however busy the machine. All
// the watches of a process share one inotify instance (closed when the last watch ends): the
// instances are a per-user resource of the whole node (128 by default), which one instance per
// dataset and DataLoader worker would exhaust for every program of the user. A drain reads the
// events of every watch and queues each its own (bounded: past kMaxQueued, the watch is told that
// events were lost). After fork the child starts an instance of its own. Best effort: where
// inotify cannot be had (the per-user limit, a filesystem that does not report changes made by
// other machines, such as NFS) Start fails saying why, and the caller reads on without it; when
// events were lost the callback is called with an empty path: any file may be gone.
//
// Thread-safety: Drain may be called from any thread; one drains the instance at a time (a call
// while another drains returns at once, and hears what that one queued for it at its next call).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ferry/result.h"

namespace ferry::internal_cache {

class DeletionWatch {
 public:
  /// Called with the path of each file deleted or renamed away (the watched folder joined with
  /// the file's name), or an empty path when events were lost.
  using Callback = std::function<void(const std::filesystem::path& deleted)>;
  /// Deletions a watch keeps for its next drain; past it they are dropped as lost.
  static constexpr size_t kMaxQueued = 4096;

  /// Watches each of `folders` (not their subfolders: list those that matter).
  static Result<std::unique_ptr<DeletionWatch>> Start(
      const std::vector<std::filesystem::path>& folders);
  ~DeletionWatch();
  DeletionWatch(const DeletionWatch&) = delete;
  DeletionWatch& operator=(const DeletionWatch&) = delete;

  /// Calls `on_deleted` for each deletion heard since the last drain.
  void Drain(const Callback& on_deleted);

  struct Instance;  // the process's inotify instance (deletion_watch.cc)

 private:
  DeletionWatch(std::shared_ptr<Instance> instance, std::map<int, std::filesystem::path> folders)
      : instance_(std::move(instance)), folders_(std::move(folders)) {}

  friend struct Instance;
  const std::shared_ptr<Instance> instance_;
  const std::map<int, std::filesystem::path> folders_;  // by watch descriptor
  // Guarded by the instance's mutex: what drains heard for this watch and not yet delivered.
  std::vector<std::filesystem::path> queued_;
  bool lost_ = false;
};

}  // namespace ferry::internal_cache
