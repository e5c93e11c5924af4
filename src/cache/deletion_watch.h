// DeletionWatch: hears of files deleted from (or renamed out of) a set of folders while a
// process reads them. A reader keeps a shard it has opened mapped; when someone removes the file
// from the cache folder under it (a user clearing space, another job), the mapping still reads
// the old bytes and nothing would ever fetch the file again. Told of the deletion, the reader
// drops the mapping and fetches the shard again when it next needs it - as Mosaic Streaming
// does, which reads each sample from the file.
//
// Linux inotify, with no thread of its own: the kernel queues the events, and the reader drains
// them when it chooses (Drain: one non-blocking read, a few hundred nanoseconds when there are
// none), so that a deletion is heard at the reader's next drain, however busy the machine. Best
// effort: where inotify cannot be had (the per-user limit on instances, a filesystem that does
// not report changes made by other machines, such as NFS) Start fails saying why, and the caller
// reads on without it; when the queue overflowed, events were lost and the callback is called
// with an empty path: any file may be gone.
//
// Thread-safety: Drain may be called from any thread; one drains at a time (a call while another
// drains returns at once).
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

  /// Watches each of `folders` (not their subfolders: list those that matter).
  static Result<std::unique_ptr<DeletionWatch>> Start(
      const std::vector<std::filesystem::path>& folders);
  ~DeletionWatch();
  DeletionWatch(const DeletionWatch&) = delete;
  DeletionWatch& operator=(const DeletionWatch&) = delete;

  /// Calls `on_deleted` for each deletion heard since the last drain.
  void Drain(const Callback& on_deleted);

 private:
  DeletionWatch(int fd, std::map<int, std::filesystem::path> folders)
      : fd_(fd), folders_(std::move(folders)) {}

  const int fd_;                                        // the inotify instance, non-blocking
  const std::map<int, std::filesystem::path> folders_;  // by watch descriptor
  std::mutex drain_;
};

}  // namespace ferry::internal_cache
