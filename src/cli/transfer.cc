#include "cli/transfer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "base/file_util.h"

namespace ferry {
namespace {

// Objects up to this size pass through memory between two remote stores; larger ones are
// spooled to a temporary file first.
constexpr uint64_t kMemoryCopyLimit = 64ull << 20;

std::filesystem::path SpoolPath() {
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return TemporaryPathFor(dir / "ferry-cp-spool");
}

}  // namespace

std::string FolderPrefix(std::string key) {
  if (!key.empty() && !key.ends_with('/')) key += '/';
  return key;
}

Result<std::vector<CopyItem>> PlanFolderCopy(ObjectStore& src, const std::string& src_prefix,
                                             const std::string& dst_prefix) {
  FERRY_ASSIGN_OR_RETURN(ListResult listing, src.List(src_prefix, /*recursive=*/true));
  std::vector<CopyItem> items;
  items.reserve(listing.objects.size());
  for (auto& obj : listing.objects) {
    items.push_back({obj.key, dst_prefix + obj.key.substr(src_prefix.size()), obj.size});
  }
  return items;
}

Result<uint64_t> CopyObject(ObjectStore& src, std::string_view src_key, ObjectStore& dst,
                            std::string_view dst_key) {
  uint64_t size = 0;
  const auto src_path = src.LocalPath(src_key);
  const auto dst_path = dst.LocalPath(dst_key);
  if (src_path) {
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, src.Head(src_key));
    size = info.size;
    FERRY_RETURN_IF_ERROR(dst.PutFile(dst_key, *src_path));
  } else if (dst_path) {
    std::error_code ec;
    std::filesystem::create_directories(dst_path->parent_path(), ec);
    if (ec) return ErrnoToStatus(ec.value(), "create folder", dst_path->parent_path());
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, src.GetToFile(src_key, *dst_path));
    size = info.size;
  } else {
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, src.Head(src_key));
    size = info.size;
    if (size <= kMemoryCopyLimit) {
      FERRY_ASSIGN_OR_RETURN(std::string data, src.Get(src_key));
      FERRY_RETURN_IF_ERROR(dst.Put(dst_key, data));
    } else {
      const std::filesystem::path spool = SpoolPath();
      auto downloaded = src.GetToFile(src_key, spool);
      Status status = downloaded.status();
      if (status.ok()) status = dst.PutFile(dst_key, spool);
      ::unlink(spool.c_str());
      FERRY_RETURN_IF_ERROR(status);
    }
  }
  // Verify what arrived.
  FERRY_ASSIGN_OR_RETURN(ObjectInfo written, dst.Head(dst_key));
  if (written.size != size) {
    return DataLossError(fmt::format("{}: holds {} bytes after the copy, the source has {}",
                                     dst.ToUrl(dst_key), written.size, size));
  }
  return size;
}

CopyReport CopyAll(ObjectStore& src, ObjectStore& dst, const std::vector<CopyItem>& items,
                   size_t jobs, const std::function<void(uint64_t, uint64_t)>& progress) {
  CopyReport report;
  std::mutex mu;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= items.size()) return;
      const CopyItem& item = items[i];
      auto copied = CopyObject(src, item.src_key, dst, item.dst_key);
      std::lock_guard lock(mu);
      if (copied) {
        ++report.objects;
        report.bytes += *copied;
      } else {
        report.failures.push_back(
            {src.ToUrl(item.src_key), dst.ToUrl(item.dst_key), copied.error()});
      }
      if (progress) progress(report.objects + report.failures.size(), report.bytes);
    }
  };
  {
    std::vector<std::jthread> workers;
    const size_t n = std::max<size_t>(1, std::min(jobs, items.size()));
    for (size_t w = 0; w < n; ++w) workers.emplace_back(work);
    // Join explicitly: a jthread's destructor requests a stop first, and every item must run.
    for (auto& w : workers) w.join();
  }
  std::sort(report.failures.begin(), report.failures.end(),
            [](const CopyFailure& a, const CopyFailure& b) { return a.src_url < b.src_url; });
  return report;
}

}  // namespace ferry
