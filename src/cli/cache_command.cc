// ferry cache ls|du|verify|clear|prune [DIR...]: cache folders looked after from outside a
// dataset (include/ferry/cache/cache_folder.h). Without a folder, ls and du look at every cache
// folder under $TMPDIR/ferry-cache (where a dataset without `local` caches).
//   ls      what each folder holds: its remote, shards cached of the index's, size against the
//           limit its readers set, and the processes reading it now
//   du      sizes: shards, ferry's records and index.json, the total against the limit
//   verify  every cached shard file against the index's sizes and digests; --remove-bad removes
//           the shards at fault (exit 1 when a problem is found)
//   clear   removes every shard not in use; --all, with nobody reading, the whole folder
//   prune   removes least recently used shards not in use: --to SIZE, --older-than DURATION
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/human_size.h"
#include "base/python_json.h"
#include "cli/command.h"
#include "ferry/cache/cache_folder.h"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

struct CacheOptions {
  std::vector<std::string> folders;
  bool json = false;
  bool remove_bad = false;
  bool all = false;
  std::string to;
  std::string older_than;
};

// "90s", "30m", "12h", "7d" (a bare number: seconds).
Result<std::chrono::seconds> ParseAge(const std::string& text) {
  size_t end = 0;
  double n = 0;
  try {
    n = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string unit = text.substr(end);
  const double scale = unit.empty() || unit == "s" ? 1
                       : unit == "m"               ? 60
                       : unit == "h"               ? 3600
                       : unit == "d"               ? 86400
                                                   : -1;
  if (end == 0 || scale < 0 || n < 0) {
    return InvalidArgumentError(fmt::format(
        "--older-than {}: not a duration (a number with s, m, h or d: 90s, 30m, 12h, 7d)", text));
  }
  return std::chrono::seconds(static_cast<int64_t>(n * scale));
}

void Print(const nlohmann::ordered_json& j) {
  std::printf("%s\n", DumpPythonJson(j, JsonKeyOrder::kInsertion).c_str());
}

std::string Limit(uint64_t limit) { return limit > 0 ? FormatBytes(limit) : "none set"; }

Result<int> RunLs(const CacheOptions& o, bool sizes_only) {
  FERRY_ASSIGN_OR_RETURN(const std::vector<fs::path> folders, CacheFoldersOrDefault(o.folders));
  for (const fs::path& folder : folders) {
    FERRY_ASSIGN_OR_RETURN(const CacheFolderInfo info, InspectCacheFolder(folder));
    const uint64_t total = info.shard_bytes + info.other_bytes;
    if (o.json) {
      nlohmann::ordered_json j;
      j["folder"] = folder.string();
      j["remote"] = info.remote;
      j["shards"] = info.shards;
      j["cached_shards"] = info.cached_shards;
      j["shard_bytes"] = info.shard_bytes;
      j["other_bytes"] = info.other_bytes;
      j["bytes"] = total;
      j["limit"] = info.limit > 0 ? nlohmann::ordered_json(info.limit) : nullptr;
      j["readers"] = info.readers;
      nlohmann::ordered_json processes = nlohmann::ordered_json::array();
      for (const auto& p : info.processes) {
        processes.push_back({{"pid", p.pid}, {"label", p.label}});
      }
      j["processes"] = std::move(processes);
      Print(j);
      continue;
    }
    if (sizes_only) {
      std::printf("%s  %s (shards %s, index and records %s), limit %s\n", folder.c_str(),
                  FormatBytes(total).c_str(), FormatBytes(info.shard_bytes).c_str(),
                  FormatBytes(info.other_bytes).c_str(), Limit(info.limit).c_str());
      continue;
    }
    std::printf("%s\n  remote   %s\n  shards   %zu of %zu cached\n  size     %s of %s\n",
                folder.c_str(), info.remote.empty() ? "-" : info.remote.c_str(), info.cached_shards,
                info.shards, FormatBytes(total).c_str(), Limit(info.limit).c_str());
    std::printf("  readers  %u iterator(s)", info.readers);
    for (const auto& p : info.processes) {
      std::printf("%s %lld %s", &p == &info.processes.front() ? "; processes" : ",",
                  static_cast<long long>(p.pid), p.label.c_str());
    }
    std::printf("\n");
  }
  return 0;
}

Result<int> RunVerify(const CacheOptions& o) {
  FERRY_ASSIGN_OR_RETURN(const std::vector<fs::path> folders, CacheFoldersOrDefault(o.folders));
  bool problems = false;
  for (const fs::path& folder : folders) {
    FERRY_ASSIGN_OR_RETURN(const CacheVerifyReport report, VerifyCacheFolder(folder, o.remove_bad));
    problems |= !report.problems.empty();
    if (o.json) {
      nlohmann::ordered_json j;
      j["folder"] = folder.string();
      j["checked"] = report.checked;
      j["hashed"] = report.hashed;
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& p : report.problems)
        list.push_back({{"file", p.file}, {"problem", p.problem}});
      j["problems"] = std::move(list);
      j["removed"] = report.removed;
      Print(j);
      continue;
    }
    for (const auto& p : report.problems) {
      std::printf("%s: %s\n", (folder / p.file).c_str(), p.problem.c_str());
    }
    std::printf("%s: %zu files checked (%zu against a digest), %zu problem(s)%s\n", folder.c_str(),
                report.checked, report.hashed, report.problems.size(),
                o.remove_bad ? fmt::format(", {} shard(s) removed", report.removed).c_str() : "");
  }
  return problems ? 1 : 0;
}

void PrintRemoval(const CacheOptions& o, const fs::path& folder, const CacheRemoval& r) {
  if (o.json) {
    Print({{"folder", folder.string()},
           {"removed_shards", r.removed_shards},
           {"freed_bytes", r.freed_bytes},
           {"pinned_shards", r.pinned_shards}});
    return;
  }
  std::printf("%s: %zu shard(s) removed, %s freed%s\n", folder.c_str(), r.removed_shards,
              FormatBytes(r.freed_bytes).c_str(),
              r.pinned_shards > 0
                  ? fmt::format("; {} in use by a reader left", r.pinned_shards).c_str()
                  : "");
}

Result<int> RunClear(const CacheOptions& o) {
  if (o.folders.empty()) {
    return InvalidArgumentError("ferry cache clear: name the folder(s) to clear");
  }
  for (const std::string& folder : o.folders) {
    FERRY_ASSIGN_OR_RETURN(const CacheRemoval r, ClearCacheFolder(folder, o.all));
    PrintRemoval(o, folder, r);
  }
  return 0;
}

Result<int> RunPrune(const CacheOptions& o) {
  if (o.folders.empty()) {
    return InvalidArgumentError("ferry cache prune: name the folder(s) to prune");
  }
  PruneOptions options;
  if (!o.to.empty()) {
    FERRY_ASSIGN_OR_RETURN(options.to_bytes, ParseHumanSize(o.to));
  }
  if (!o.older_than.empty()) {
    FERRY_ASSIGN_OR_RETURN(options.older_than, ParseAge(o.older_than));
  }
  if (!options.to_bytes && !options.older_than) {
    return InvalidArgumentError("ferry cache prune: give --to SIZE or --older-than DURATION");
  }
  for (const std::string& folder : o.folders) {
    FERRY_ASSIGN_OR_RETURN(const CacheRemoval r, PruneCacheFolder(folder, options));
    PrintRemoval(o, folder, r);
  }
  return 0;
}

}  // namespace

Command AddCacheCommand(CLI::App& parent) {
  auto o = std::make_shared<CacheOptions>();
  CLI::App* app = parent.add_subcommand("cache",
                                        "Look after cache folders: ls, du, verify, "
                                        "clear, prune");
  app->require_subcommand(1);
  const auto folders = [&](CLI::App* sub, const char* help) {
    sub->add_option("folders", o->folders, help);
    sub->add_flag("--json", o->json, "One JSON object per folder");
  };
  CLI::App* ls = app->add_subcommand("ls", "What each cache folder holds, and who reads it");
  folders(ls, "Cache folders (default: every one under $TMPDIR/ferry-cache)");
  CLI::App* du = app->add_subcommand("du", "Sizes of cache folders against their limit");
  folders(du, "Cache folders (default: every one under $TMPDIR/ferry-cache)");
  CLI::App* verify =
      app->add_subcommand("verify", "Check cached shards against the index's sizes and digests");
  folders(verify, "Cache folders (default: every one under $TMPDIR/ferry-cache)");
  verify->add_flag("--remove-bad", o->remove_bad,
                   "Remove the shards at fault (they are downloaded again when read)");
  CLI::App* clear = app->add_subcommand("clear", "Remove the shards no reader is using");
  folders(clear, "Cache folders to clear");
  clear->add_flag("--all", o->all,
                  "Remove everything, index.json and ferry's records too (nobody may be reading)");
  CLI::App* prune =
      app->add_subcommand("prune", "Remove least recently used shards no reader is using");
  folders(prune, "Cache folders to prune");
  prune->add_option("--to", o->to, "Remove until the folder fits in this size (e.g. 50gb)");
  prune->add_option("--older-than", o->older_than,
                    "Remove shards not used for this long (e.g. 90s, 30m, 12h, 7d)");
  return {app, [o, ls, du, verify, clear, prune]() -> Result<int> {
            if (ls->parsed()) return RunLs(*o, false);
            if (du->parsed()) return RunLs(*o, true);
            if (verify->parsed()) return RunVerify(*o);
            if (clear->parsed()) return RunClear(*o);
            if (prune->parsed()) return RunPrune(*o);
            return InvalidArgumentError("ferry cache: ls, du, verify, clear or prune");
          }};
}

}  // namespace ferry::cli
