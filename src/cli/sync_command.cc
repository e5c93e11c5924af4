// ferry sync SRC DST [--delete] [--dry-run] [--jobs N]: make the DST folder hold what the SRC
// folder holds. An object is copied unless DST already has it with the same size and - where
// the two stores' etags are comparable (both plain MD5 hex) - the same etag, or else a
// modification time no older than the source's, to the second. --delete removes DST objects absent
// from SRC. A missing destination bucket or container is one error (exit 3); Ctrl+C ends the copies
// in flight, deletes nothing, says what is left and exits 130.
//
// --mirror-fill makes DST a mirror of the dataset in SRC (docs/sources.md): it copies index.json
// when DST lacks it, then the files index.json names that DST lacks or holds in another size - a
// copy of the right size is the same bytes, and copying it again would pay the egress again. A
// DST whose index.json differs holds another dataset, which it refuses to mix in.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/human_size.h"
#include "base/python_json.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/transfer.h"
#include "ferry/format/index.h"
#include "ferry/storage/registry.h"
#include "storage/http/http_types.h"
#include "storage/http/store_checksum.h"
#include "storage/object_key.h"

namespace ferry::cli {
namespace {

struct SyncOptions {
  std::string src;
  std::string dst;
  bool delete_extra = false;
  bool dry_run = false;
  bool quiet = false;
  bool json = false;
  bool mirror_fill = false;
  size_t jobs = 16;
};

constexpr std::string_view kIndex = "index.json";

// What --mirror-fill copies: index.json unless DST has it (first, so that the copy serves as a
// partly staged mirror while the rest lands), then every form of every file the index names that
// SRC holds and DST lacks or holds in another size.
Result<std::vector<CopyItem>> MirrorFillItems(
    const StoreAndKey& src, const StoreAndKey& dst, const std::string& src_prefix,
    const std::string& dst_prefix, const std::map<std::string, const ObjectInfo*>& source,
    const std::map<std::string, const ObjectInfo*>& existing, size_t& unchanged) {
  const std::string src_index = src_prefix + std::string(kIndex);
  const std::string src_url = http::RedactUrl(src.store->ToUrl(src_index));
  auto text = src.store->Get(src_index);
  if (!text) {
    return text.status().WithContext("--mirror-fill needs the dataset's index.json in SRC");
  }
  FERRY_ASSIGN_OR_RETURN(DatasetDescription dataset, ParseIndexFile(*text, src_url));
  std::vector<CopyItem> items;
  if (existing.contains(std::string(kIndex))) {
    auto theirs = dst.store->Get(dst_prefix + std::string(kIndex));
    if (!theirs) return theirs.status();
    if (*theirs != *text) {
      return FailedPreconditionError(fmt::format(
          "{} is not {}: DST holds another dataset, which --mirror-fill does not mix into; "
          "remove it, or sync without --mirror-fill",
          http::RedactUrl(dst.store->ToUrl(dst_prefix + std::string(kIndex))), src_url));
    }
    ++unchanged;
  } else {
    items.push_back({src_index, dst_prefix + std::string(kIndex), text->size()});
  }
  for (const ShardDescription& shard : dataset.shards) {
    for (const FileInfo* file : shard.all_forms()) {
      if (!source.contains(file->basename)) continue;  // the form SRC does not keep
      const auto there = existing.find(file->basename);
      if (there != existing.end() && there->second->size == file->bytes) {
        ++unchanged;
        continue;
      }
      items.push_back({src_prefix + file->basename, dst_prefix + file->basename, file->bytes});
    }
  }
  return items;
}

bool AlreadyThere(const ObjectInfo& src, const ObjectInfo& dst) {
  if (src.size != dst.size) return false;
  if (http::IsMd5Hex(src.etag) && http::IsMd5Hex(dst.etag)) return src.etag == dst.etag;
  if (src.mtime && dst.mtime) {
    // Object stores keep whole seconds (Last-Modified), local files nanoseconds: an object
    // uploaded in the second its file last changed would otherwise always look older.
    using std::chrono::floor;
    using std::chrono::seconds;
    return floor<seconds>(*dst.mtime) >= floor<seconds>(*src.mtime);
  }
  return true;
}

Result<int> RunSync(const SyncOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  FERRY_ASSIGN_OR_RETURN(StoreAndKey src, OpenUrl(o.src));
  FERRY_ASSIGN_OR_RETURN(StoreAndKey dst, OpenUrl(o.dst));
  if (dst.store->read_only()) {
    return InvalidArgumentError(fmt::format("{}: cannot sync into a read-only store", o.dst));
  }
  const std::string src_prefix = FolderKey(src.key);
  const std::string dst_prefix = FolderKey(dst.key);
  FERRY_ASSIGN_OR_RETURN(ListResult src_list, src.store->List(src_prefix, true));
  FERRY_ASSIGN_OR_RETURN(ListResult dst_list, dst.store->List(dst_prefix, true));
  std::map<std::string, const ObjectInfo*> existing;  // relative key -> destination object
  for (const auto& obj : dst_list.objects) existing[obj.key.substr(dst_prefix.size())] = &obj;

  std::vector<CopyItem> items;
  size_t unchanged = 0;
  if (o.mirror_fill) {
    std::map<std::string, const ObjectInfo*> source;
    for (const auto& obj : src_list.objects) source[obj.key.substr(src_prefix.size())] = &obj;
    FERRY_ASSIGN_OR_RETURN(
        items, MirrorFillItems(src, dst, src_prefix, dst_prefix, source, existing, unchanged));
  } else {
    for (const auto& obj : src_list.objects) {
      const std::string rel = obj.key.substr(src_prefix.size());
      auto it = existing.find(rel);
      if (it != existing.end()) {
        const bool same = AlreadyThere(obj, *it->second);
        existing.erase(it);
        if (same) {
          ++unchanged;
          continue;
        }
      }
      items.push_back({obj.key, dst_prefix + rel, obj.size});
    }
  }
  std::vector<std::string> extra;  // destination keys with no source
  if (o.delete_extra) {
    for (const auto& [rel, obj] : existing) extra.push_back(obj->key);
  }
  if (o.dry_run) {
    for (const auto& item : items) {
      std::printf("copy %s -> %s\n", src.store->ToUrl(item.src_key).c_str(),
                  dst.store->ToUrl(item.dst_key).c_str());
    }
    for (const auto& key : extra) std::printf("delete %s\n", dst.store->ToUrl(key).c_str());
    std::printf("would copy %zu, delete %zu, leave %zu unchanged\n", items.size(), extra.size(),
                unchanged);
    return 0;
  }
  ProgressBar progress("sync", "objects", items.size(), !o.quiet && !o.json);
  InterruptWatch interrupt;
  CopyReport report = CopyAll(
      *src.store, *dst.store, items, o.jobs,
      [&](uint64_t n, uint64_t bytes) { progress.Update(n, bytes); }, interrupt.token());
  progress.Finish();
  if (report.destination_missing) {
    return DestinationMissingError(report, items.size(), http::RedactUrl(o.dst));
  }
  size_t deleted = 0;
  // After Ctrl+C nothing is deleted: the next run deletes once everything is there.
  for (const auto& key : report.stopped ? std::vector<std::string>{} : extra) {
    if (Status s = dst.store->Remove(key); !s.ok()) {
      report.failures.push_back({"", dst.store->ToUrl(key), s});
    } else {
      ++deleted;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    nlohmann::ordered_json j = CopyReportJson(report, items.size(), seconds);
    j["deleted"] = deleted;
    j["unchanged"] = unchanged;
    std::printf("%s\n", DumpPythonJson(j, JsonKeyOrder::kInsertion).c_str());
  } else {
    for (const auto& f : report.failures) {
      std::printf("FAILED %s%s%s: %s\n", f.src_url.c_str(), f.src_url.empty() ? "" : " -> ",
                  f.dst_url.c_str(), f.error.message().c_str());
    }
    std::printf("copied %llu objects (%s), deleted %zu, %zu unchanged, in %.2f s\n",
                static_cast<unsigned long long>(report.objects), FormatBytes(report.bytes).c_str(),
                deleted, unchanged, seconds);
  }
  if (report.stopped) {
    std::vector<std::string> resume = {"sync", http::RedactUrl(o.src), http::RedactUrl(o.dst)};
    if (o.delete_extra) resume.push_back("--delete");
    if (o.mirror_fill) resume.push_back("--mirror-fill");
    std::fflush(stdout);
    std::fprintf(stderr, "ferry sync: %s\n", InterruptedLine(report, items, resume).c_str());
    return kExitInterrupted;
  }
  return report.failures.empty() ? 0 : 1;
}

}  // namespace

Command AddSyncCommand(CLI::App& parent) {
  auto o = std::make_shared<SyncOptions>();
  CLI::App* app = parent.add_subcommand(
      "sync", "Copy what is new or changed from the SRC folder to the DST folder");
  app->add_option("src", o->src, "Source folder URL or path")->required();
  app->add_option("dst", o->dst, "Destination folder URL or path")->required();
  CLI::Option* remove =
      app->add_flag("--delete", o->delete_extra, "Remove destination objects absent from SRC");
  app->add_flag("--mirror-fill", o->mirror_fill,
                "Make DST a mirror of the dataset in SRC: copy index.json and the files it names "
                "that DST lacks or holds in another size (docs/sources.md)")
      ->excludes(remove);
  app->add_option("-j,--jobs", o->jobs, "Objects copied at once")
      ->check(CLI::Range(1, kMaxCopyJobs))
      ->capture_default_str();
  app->add_flag("-n,--dry-run", o->dry_run, "Show what would be copied and deleted");
  app->add_flag("-q,--quiet", o->quiet, "No progress display");
  app->add_flag("--json", o->json, "Print the outcome as one JSON object (no progress display)");
  return {app, [o] { return RunSync(*o); }};
}

}  // namespace ferry::cli
