// DatasetUploader: sends a dataset that an MdsWriter is writing into a local staging folder to a
// store prefix while the writing goes on, as Python's MDSWriter does for a remote `out`.
//
// Each shard file is handed over (Add, wired to MdsWriterOptions::on_shard_written) as soon as
// it is complete under its name, uploaded by one of `concurrency` threads and then deleted from
// the staging folder unless `keep_local`. Finish waits for every shard and only then uploads the
// closing files in the order given (classes.json, then index.json), so a reader of the prefix
// never sees an index that names a shard not there yet. At most `max_queued` shards wait for a
// thread: Add blocks beyond that, which holds the writer back and bounds the staging disk.
//
// Errors: the first failed upload (the store's error names the URL) stops the rest; Add never
// blocks after it, and Finish returns it. Destroying an uploader that was not finished stops its
// threads after the uploads in progress and uploads no index.
//
// Thread-safety: Add from any thread (the writer's flush threads); the rest from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/bounded_queue.h"
#include "base/mutex.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry::cli {

struct DatasetUploaderOptions {
  size_t concurrency = 8;
  size_t max_queued = 4;
  bool keep_local = false;  // keep the staged files (a complete local copy) after uploading
};

class DatasetUploader {
 public:
  DatasetUploader(std::shared_ptr<ObjectStore> store, std::string prefix,
                  std::filesystem::path staging, DatasetUploaderOptions options);
  ~DatasetUploader();
  DatasetUploader(const DatasetUploader&) = delete;
  DatasetUploader& operator=(const DatasetUploader&) = delete;

  /// Queues staging/`basename` for upload to prefix/`basename`.
  void Add(const std::string& basename);

  /// Waits for the queued uploads, then uploads `closing` one after another, in order.
  Status Finish(const std::vector<std::string>& closing);

  /// Removes the shard files directly under the prefix that `keep` does not name: what a
  /// replaced dataset leaves behind (as MdsWriter removes them from a local folder).
  Status RemoveOtherShards(const std::set<std::string>& keep);

  /// The first failed upload so far (Ok while none failed): lets the writing stop early.
  Status error() const;

  /// The (redacted) URL of `basename` under the prefix.
  std::string UrlOf(std::string_view basename) const;

  uint64_t files_uploaded() const { return files_; }
  uint64_t bytes_uploaded() const { return bytes_; }

 private:
  void UploadLoop(std::stop_token stop);
  Status Upload(const std::string& basename);

  const std::shared_ptr<ObjectStore> store_;
  const std::string prefix_;
  const std::filesystem::path staging_;
  const DatasetUploaderOptions options_;
  BoundedQueue<std::string> queue_;
  std::atomic<uint64_t> files_{0};
  std::atomic<uint64_t> bytes_{0};
  mutable Mutex mu_;
  Status error_ GUARDED_BY(mu_);  // the first failure
  // Last: started after everything they use, joined (destroyed) first.
  std::vector<std::jthread> threads_;
};

}  // namespace ferry::cli
