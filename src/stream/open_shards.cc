#include "stream/open_shards.h"

#include <set>
#include <system_error>
#include <vector>

#include "base/log.h"

namespace ferry::internal_stream {

namespace fs = std::filesystem;

std::shared_ptr<const OpenShard> OpenShards::Find(const ShardKey& key) {
  MutexLock lock(mu_);
  if (auto it = recent_index_.find(key); it != recent_index_.end()) {
    recent_.splice(recent_.begin(), recent_, it->second);  // most recently used first
    return it->second->shard;
  }
  if (auto it = open_.find(key); it != open_.end()) return it->second.lock();
  return nullptr;
}

void OpenShards::Add(const ShardKey& key, std::shared_ptr<const OpenShard> shard, uint64_t bytes,
                     uint64_t byte_cap) {
  MutexLock lock(mu_);
  open_[key] = shard;
  if (open_.size() > 4096) {
    std::erase_if(open_, [](const auto& kv) { return kv.second.expired(); });
  }
  if (recent_index_.count(key) != 0) return;
  recent_.push_front({.key = key, .shard = std::move(shard), .bytes = bytes});
  recent_index_[key] = recent_.begin();
  recent_bytes_ += bytes;
  while (recent_.size() > kRecentShards || (recent_.size() > 1 && recent_bytes_ > byte_cap)) {
    recent_bytes_ -= recent_.back().bytes;
    recent_index_.erase(recent_.back().key);
    recent_.pop_back();
  }
}

void OpenShards::Drop(const ShardKey& key, bool deleted) {
  MutexLock lock(mu_);
  DropLocked(key, deleted);
}

void OpenShards::DropLocked(const ShardKey& key, bool deleted) {
  if (auto it = open_.find(key); it != open_.end()) {
    if (auto shard = it->second.lock(); shard && deleted) shard->deleted = true;
    open_.erase(it);
  }
  if (auto it = recent_index_.find(key); it != recent_index_.end()) {
    recent_bytes_ -= it->second->bytes;
    recent_.erase(it->second);
    recent_index_.erase(it);
  }
}

void OpenShards::Watch(const std::unordered_map<std::string, ShardKey>& files) {
  std::call_once(watch_once_, [&] {
    std::set<fs::path> folders;
    for (const auto& [path, key] : files) {
      const fs::path file = fs::path(path).lexically_normal();
      files_[file.string()] = key;
      // A subfolder not made yet (of a merged dataset, filled as its shards arrive) is not
      // watched.
      std::error_code ec;
      if (fs::is_directory(file.parent_path(), ec)) folders.insert(file.parent_path());
    }
    if (folders.empty()) return;
    auto watch = internal_cache::DeletionWatch::Start({folders.begin(), folders.end()});
    if (!watch) {
      Log().debug("not watching the cache folders for deleted shards: {}",
                  watch.status().ToString());
      return;
    }
    watch_ = std::move(*watch);
    watching_.store(true, std::memory_order_release);
  });
}

void OpenShards::DrainDeletions() {
  if (!watching_.load(std::memory_order_acquire)) return;
  watch_->Drain([this](const fs::path& path) { OnDeleted(path); });
}

void OpenShards::NoticeDeletions() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t next = next_drain_ns_.load(std::memory_order_relaxed);
  if (now < next) return;
  // One caller drains; the others go on.
  if (next_drain_ns_.compare_exchange_strong(next, now + 20'000, std::memory_order_relaxed)) {
    DrainDeletions();
  }
}

void OpenShards::OnDeleted(const fs::path& path) {
  MutexLock lock(mu_);
  if (!path.empty()) {
    if (auto it = files_.find(path.lexically_normal().string()); it != files_.end()) {
      DropLocked(it->second, true);
    }
    return;
  }
  // Events were lost: any open shard may be gone.
  std::vector<ShardKey> gone;
  for (const auto& [key, weak] : open_) {
    std::error_code ec;
    if (auto shard = weak.lock(); shard && !fs::exists(shard->handle.path(), ec)) {
      gone.push_back(key);
    }
  }
  for (const ShardKey& key : gone) DropLocked(key, true);
}

}  // namespace ferry::internal_stream
