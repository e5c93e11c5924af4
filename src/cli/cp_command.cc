// ferry cp SRC DST [-r] [--jobs N] [--dry-run]: copy objects between any two stores (local
// paths, s3://, az://, abfs[s]://, gs://; http(s):// as a source).
//
// Without -r, SRC is one object; a DST ending in '/' (or an existing local folder) receives it
// under its own name. With -r, everything below the SRC folder is copied below DST, keeping
// relative paths (like `aws s3 cp --recursive`). Objects are copied by `--jobs` workers, each
// copy checked by size; failures are listed and make the exit status 1. A missing destination
// bucket or container is one error (exit 3), not one per object. Ctrl+C ends the copies in
// flight, prints what was copied and the command that copies the rest, and exits 130.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/human_size.h"
#include "base/python_json.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/transfer.h"
#include "ferry/storage/registry.h"
#include "storage/http/http_types.h"
#include "storage/object_key.h"

namespace ferry::cli {
namespace {

struct CpOptions {
  std::string src;
  std::string dst;
  bool recursive = false;
  bool dry_run = false;
  bool quiet = false;
  bool json = false;
  size_t jobs = 16;
};

std::string BaseName(std::string_view key) {
  const size_t slash = key.rfind('/');
  return std::string(slash == std::string_view::npos ? key : key.substr(slash + 1));
}

Result<int> RunCp(const CpOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  FERRY_ASSIGN_OR_RETURN(StoreAndKey src, OpenUrl(o.src));
  FERRY_ASSIGN_OR_RETURN(StoreAndKey dst, OpenUrl(o.dst));
  if (dst.store->read_only()) {
    return InvalidArgumentError(fmt::format("{}: cannot copy into a read-only store", o.dst));
  }
  std::vector<CopyItem> items;
  if (o.recursive) {
    FERRY_ASSIGN_OR_RETURN(items,
                           PlanFolderCopy(*src.store, FolderKey(src.key), FolderKey(dst.key)));
    if (items.empty()) {
      return NotFoundError(fmt::format("{}: nothing to copy", src.store->ToUrl(src.key)));
    }
  } else {
    FERRY_ASSIGN_OR_RETURN(ObjectInfo info, src.store->Head(src.key));
    std::string dst_key = dst.key;
    const auto local = dst.store->LocalPath(dst_key);
    std::error_code ec;
    if (dst_key.empty() || dst_key.ends_with('/') ||
        (local && std::filesystem::is_directory(*local, ec))) {
      dst_key = FolderKey(dst_key) + BaseName(src.key);
    }
    items.push_back({src.key, dst_key, info.size});
  }
  uint64_t planned_bytes = 0;
  for (const auto& item : items) planned_bytes += item.size;
  if (o.dry_run) {
    for (const auto& item : items) {
      std::printf("copy %s -> %s (%s)\n", src.store->ToUrl(item.src_key).c_str(),
                  dst.store->ToUrl(item.dst_key).c_str(), FormatBytes(item.size).c_str());
    }
    std::printf("would copy %zu objects, %s\n", items.size(), FormatBytes(planned_bytes).c_str());
    return 0;
  }
  ProgressBar progress("cp", "objects", items.size(), !o.quiet && !o.json);
  InterruptWatch interrupt;
  CopyReport report = CopyAll(
      *src.store, *dst.store, items, o.jobs,
      [&](uint64_t n, uint64_t bytes) { progress.Update(n, bytes); }, interrupt.token());
  progress.Finish();
  if (report.destination_missing) {
    return DestinationMissingError(report, items.size(), http::RedactUrl(o.dst));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    std::printf("%s\n", DumpPythonJson(CopyReportJson(report, items.size(), seconds),
                                       JsonKeyOrder::kInsertion)
                            .c_str());
  }
  if (!o.json) {
    for (const auto& f : report.failures) {
      std::printf("FAILED %s -> %s: %s\n", f.src_url.c_str(), f.dst_url.c_str(),
                  f.error.message().c_str());
    }
    std::printf("copied %llu of %zu objects (%s) in %.2f s: %.0f objects/s, %.1f MB/s\n",
                static_cast<unsigned long long>(report.objects), items.size(),
                FormatBytes(report.bytes).c_str(), seconds,
                static_cast<double>(report.objects) / seconds,
                static_cast<double>(report.bytes) / 1e6 / seconds);
  }
  if (report.stopped) {
    // A folder copy is finished by sync, which skips what arrived; one object is copied again.
    const std::vector<std::string> resume = {o.recursive ? "sync" : "cp", http::RedactUrl(o.src),
                                             http::RedactUrl(o.dst)};
    std::fflush(stdout);
    std::fprintf(stderr, "ferry cp: %s\n", InterruptedLine(report, items, resume).c_str());
    return kExitInterrupted;
  }
  return report.failures.empty() ? 0 : 1;
}

}  // namespace

Command AddCpCommand(CLI::App& parent) {
  auto o = std::make_shared<CpOptions>();
  CLI::App* app = parent.add_subcommand(
      "cp",
      "Copy objects between stores (local, s3://, az://, abfs[s]://, gs://, http(s):// as "
      "source); exit 1 listing any object that failed");
  app->add_option("src", o->src, "Source URL or path")->required();
  app->add_option("dst", o->dst, "Destination URL or path")->required();
  app->add_flag("-r,--recursive", o->recursive, "Copy everything below SRC");
  app->add_option("-j,--jobs", o->jobs, "Objects copied at once")
      ->check(CLI::Range(1, kMaxCopyJobs))
      ->capture_default_str();
  app->add_flag("-n,--dry-run", o->dry_run, "Show what would be copied");
  app->add_flag("-q,--quiet", o->quiet, "No progress display");
  app->add_flag("--json", o->json, "Print the outcome as one JSON object (no progress display)");
  return {app, [o] { return RunCp(*o); }};
}

}  // namespace ferry::cli
