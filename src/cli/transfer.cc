#include "cli/transfer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <stop_token>
#include <thread>

#include "base/file_util.h"
#include "base/human_size.h"
#include "base/mutex.h"

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

namespace {

// CopyObject, saying whether a failure came from the destination (`*at_destination`): a
// destination's kNotFound means that its bucket or container is missing, a source's only that one
// object is.
Result<uint64_t> Copy(ObjectStore& src, std::string_view src_key, ObjectStore& dst,
                      std::string_view dst_key, std::stop_token stop, bool* at_destination) {
  *at_destination = false;
  if (stop.stop_requested()) {
    return CancelledError(fmt::format("{}: the copy was stopped", src.ToUrl(src_key)));
  }
  // An object small enough for one request is uploaded whole once started: a PUT cut mid-body
  // can leave a truncated object behind on some servers (s3rver keeps an empty one), where a
  // multipart upload that is stopped is aborted and never becomes visible.
  const auto upload_stop = [&](uint64_t bytes) {
    return bytes <= kMemoryCopyLimit ? std::stop_token() : stop;
  };
  uint64_t size = 0;
  const auto src_path = src.LocalPath(src_key);
  const auto dst_path = dst.LocalPath(dst_key);
  if (src_path) {
    std::error_code ec;
    size = std::filesystem::file_size(*src_path, ec);
    if (ec) return ErrnoToStatus(ec.value(), "stat", *src_path);
    *at_destination = true;
    FERRY_RETURN_IF_ERROR(dst.PutFile(dst_key, *src_path, upload_stop(size)));
  } else if (dst_path) {
    std::error_code ec;
    std::filesystem::create_directories(dst_path->parent_path(), ec);
    if (ec) {
      *at_destination = true;
      return ErrnoToStatus(ec.value(), "create folder", dst_path->parent_path());
    }
    FERRY_ASSIGN_OR_RETURN(const ObjectInfo info, src.GetToFile(src_key, *dst_path, stop));
    size = info.size;
  } else {
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, src.Head(src_key));
    size = info.size;
    if (size <= kMemoryCopyLimit) {
      FERRY_ASSIGN_OR_RETURN(const std::string data, src.Get(src_key, stop));
      *at_destination = true;
      FERRY_RETURN_IF_ERROR(dst.Put(dst_key, data, upload_stop(size)));
    } else {
      const std::filesystem::path spool = SpoolPath();
      Status status = src.GetToFile(src_key, spool, stop).status();
      if (status.ok()) {
        *at_destination = true;
        status = dst.PutFile(dst_key, spool, stop);
      }
      ::unlink(spool.c_str());
      FERRY_RETURN_IF_ERROR(status);
    }
  }
  // Verify what arrived.
  *at_destination = true;
  FERRY_ASSIGN_OR_RETURN(ObjectInfo written, dst.Head(dst_key));
  if (written.size != size) {
    return DataLossError(fmt::format("{}: holds {} bytes after the copy, the source has {}",
                                     dst.ToUrl(dst_key), written.size, size));
  }
  return size;
}

}  // namespace

Result<uint64_t> CopyObject(ObjectStore& src, std::string_view src_key, ObjectStore& dst,
                            std::string_view dst_key, std::stop_token stop) {
  bool at_destination = false;
  return Copy(src, src_key, dst, dst_key, stop, &at_destination);
}

CopyReport CopyAll(ObjectStore& src, ObjectStore& dst, const std::vector<CopyItem>& items,
                   size_t jobs, const std::function<void(uint64_t, uint64_t)>& progress,
                   std::stop_token stop) {
  CopyReport report;
  Mutex mu;
  std::atomic<size_t> next{0};
  // Ends the workers on the caller's stop or on a missing destination, whichever comes first.
  std::stop_source halt;
  std::stop_callback forward(stop, [&] { halt.request_stop(); });
  auto work = [&] {
    for (;;) {
      if (halt.stop_requested()) return;
      const size_t i = next.fetch_add(1);
      if (i >= items.size()) return;
      const CopyItem& item = items[i];
      bool at_destination = false;
      auto copied = Copy(src, item.src_key, dst, item.dst_key, halt.get_token(), &at_destination);
      MutexLock lock(mu);
      if (copied) {
        ++report.objects;
        report.bytes += *copied;
      } else if (copied.error().code() == StatusCode::kCancelled && halt.stop_requested()) {
        continue;  // not copied, not a failure: it is left for the next run
      } else if (copied.error().code() == StatusCode::kNotFound && at_destination) {
        if (!report.destination_missing) {
          // The store's message starts with the object's URL; the caller names the destination.
          std::string why = copied.error().message();
          const std::string url = dst.ToUrl(item.dst_key);
          if (why.starts_with(url + ": ")) why.erase(0, url.size() + 2);
          report.destination_missing = NotFoundError(std::move(why));
        }
        halt.request_stop();
        continue;
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
  report.stopped = stop.stop_requested() &&
                   report.objects + report.failures.size() < static_cast<uint64_t>(items.size());
  std::sort(report.failures.begin(), report.failures.end(),
            [](const CopyFailure& a, const CopyFailure& b) { return a.src_url < b.src_url; });
  return report;
}

Status DestinationMissingError(const CopyReport& report, size_t planned, std::string_view dst_url) {
  return NotFoundError(
      fmt::format("cannot copy into {}: {} ({} of {} objects copied, the rest not tried)", dst_url,
                  report.destination_missing->message(), report.objects, planned));
}

std::string InterruptedLine(const CopyReport& report, const std::vector<CopyItem>& items,
                            const std::vector<std::string>& resume) {
  uint64_t planned = 0;
  for (const CopyItem& item : items) planned += item.size;
  const uint64_t left = items.size() - report.objects;
  std::string command = "ferry";
  for (const std::string& word : resume) {
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_./:@%+=,-") == std::string::npos;
    std::string quoted = word;
    for (size_t at = 0; (at = quoted.find('\'', at)) != std::string::npos; at += 4) {
      quoted.replace(at, 1, "'\\''");
    }
    command += " " + (plain ? word : "'" + quoted + "'");
  }
  return fmt::format("interrupted: {} of {} objects ({}) not copied; run `{}` to copy the rest",
                     left, items.size(), FormatBytes(planned - std::min(planned, report.bytes)),
                     command);
}

nlohmann::ordered_json CopyReportJson(const CopyReport& report, size_t planned, double seconds) {
  nlohmann::ordered_json failed = nlohmann::ordered_json::array();
  for (const CopyFailure& f : report.failures) {
    failed.push_back({{"src", f.src_url}, {"dst", f.dst_url}, {"error", f.error.message()}});
  }
  return {{"objects", report.objects}, {"planned", planned},          {"bytes", report.bytes},
          {"seconds", seconds},        {"failed", std::move(failed)}, {"stopped", report.stopped}};
}

}  // namespace ferry
