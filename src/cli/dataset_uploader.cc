#include "cli/dataset_uploader.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "base/file_util.h"
#include "cache/shard_downloader.h"
#include "files/file_listing.h"
#include "storage/http/http_types.h"
#include "storage/object_key.h"

namespace ferry::cli {

DatasetUploader::DatasetUploader(std::shared_ptr<ObjectStore> store, std::string prefix,
                                 std::filesystem::path staging, DatasetUploaderOptions options)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      staging_(std::move(staging)),
      options_(options),
      queue_(std::max<size_t>(1, options.max_queued)) {
  const size_t n = std::max<size_t>(1, options_.concurrency);
  for (size_t i = 0; i < n; ++i) {
    threads_.emplace_back([this](std::stop_token stop) { UploadLoop(stop); });
  }
}

DatasetUploader::~DatasetUploader() {
  // Unfinished: the uploads in progress end, the queued ones are dropped (no index follows).
  for (auto& t : threads_) t.request_stop();
  queue_.Close();
}

std::string DatasetUploader::UrlOf(std::string_view basename) const {
  return http::RedactUrl(store_->ToUrl(JoinKey(prefix_, basename)));
}

void DatasetUploader::Add(const std::string& basename) {
  // False once closed after a failure: the shard is not uploaded, Finish reports why.
  (void)queue_.Push(basename);
}

Status DatasetUploader::error() const {
  MutexLock lock(mu_);
  return error_;
}

Status DatasetUploader::Upload(const std::string& basename) {
  const std::filesystem::path path = staging_ / basename;
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return ErrnoToStatus(ec.value(), "stat", path);
  if (Status s = store_->PutFile(JoinKey(prefix_, basename), path); !s.ok()) {
    return s.WithContext("uploading");  // the store's error names the URL
  }
  files_ += 1;
  bytes_ += size;
  if (!options_.keep_local) {
    std::filesystem::remove(path, ec);
    if (ec) return ErrnoToStatus(ec.value(), "remove", path);
  }
  return Status::Ok();
}

void DatasetUploader::UploadLoop(std::stop_token stop) {
  // A closed queue still hands out what it holds (Finish drains it); a stop does not.
  while (!stop.stop_requested()) {
    auto basename = queue_.Pop(stop);
    if (!basename || stop.stop_requested()) break;
    if (!error().ok()) continue;  // the first error wins; drain the rest
    if (Status s = Upload(*basename); !s.ok()) {
      {
        MutexLock lock(mu_);
        if (error_.ok()) error_ = std::move(s);
      }
      queue_.Close();  // a writer blocked in Add goes on, and to its end, where Finish says why
    }
  }
}

Status DatasetUploader::Finish(const std::vector<std::string>& closing) {
  queue_.Close();
  // Joined without a stop request, so that the queued shards are all uploaded first.
  for (auto& t : threads_) t.join();
  threads_.clear();
  FERRY_RETURN_IF_ERROR(error());
  for (const std::string& basename : closing) FERRY_RETURN_IF_ERROR(Upload(basename));
  return Status::Ok();
}

Status DatasetUploader::RemoveOtherShards(const std::set<std::string>& keep) {
  const std::string folder = FolderKey(prefix_);
  FERRY_ASSIGN_OR_RETURN(ListResult listed, store_->List(folder, /*recursive=*/false));
  for (const ObjectInfo& object : listed.objects) {
    if (!object.key.starts_with(folder)) continue;
    const std::string name = object.key.substr(folder.size());
    if (!internal_files::IsMdsShardName(name) || keep.contains(name)) continue;
    if (Status s = store_->Remove(object.key); !s.ok()) {
      return s.WithContext(fmt::format("removing the replaced dataset's {}", UrlOf(name)));
    }
  }
  return Status::Ok();
}

}  // namespace ferry::cli
