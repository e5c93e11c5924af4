// ferry top [FOLDER...] [--json] [--interval S] [--count N]: a live view of the processes
// reading cache folders on this node - samples/s, MB/s per store, requests in flight, cache use
// against its limit, time spent waiting by cause - from their node-wide counters
// (ferry/metrics/node_metrics.h), refreshed every --interval seconds until Ctrl+C or --count
// refreshes. Without a folder: every folder under the default cache root ($TMPDIR/ferry-cache,
// where a dataset without `local` caches). On a terminal the screen is redrawn in place;
// otherwise (and with --json, one JSON object per line) each refresh is printed after the last.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "base/python_json.h"
#include "base/stoppable_sleep.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/metrics_port.h"
#include "cli/top_view.h"
#include "ferry/cache/cache_folder.h"
#include "ferry/cache/shard_cache.h"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

struct TopOptions {
  std::vector<std::string> folders;
  bool json = false;
  double interval_s = 1;
  uint64_t count = 0;
  int metrics_port = -1;
  std::string metrics_host = "127.0.0.1";
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What the folder's cache_limit counts of it now; 0 while it has no index.json.
uint64_t CacheBytes(std::optional<CacheFolderMeter>& meter, const fs::path& folder) {
  if (!meter) {
    auto opened = CacheFolderMeter::Open(folder);
    if (!opened) return 0;
    meter = std::move(*opened);
  }
  return meter->Bytes();
}

Result<int> RunTop(const TopOptions& o) {
  auto found = CacheFoldersOrDefault(o.folders);
  if (!found) return found.status().WithContext("ferry top");
  const std::vector<fs::path> folders = std::move(*found);
  for (const fs::path& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
      return NotFoundError(fmt::format("{}: no such folder", folder.string()));
    }
  }
  std::vector<std::string> names;
  for (const fs::path& folder : folders) names.push_back(folder.string());
  FERRY_ASSIGN_OR_RETURN(const auto metrics_server,
                         ServeMetrics(o.metrics_port, o.metrics_host, names, false));
  const bool terminal = !o.json && ::isatty(STDOUT_FILENO);
  const InterruptWatch interrupt;
  std::vector<std::optional<TopReading>> before(folders.size());
  // Opened at the first refresh that finds the folder's index.json (a folder given before its
  // first reader wrote one has none yet).
  std::vector<std::optional<CacheFolderMeter>> meters(folders.size());
  for (uint64_t refresh = 0; o.count == 0 || refresh < o.count; ++refresh) {
    if (refresh > 0 &&
        !SleepUnlessStopped(std::chrono::duration<double>(o.interval_s), interrupt.token())) {
      break;
    }
    std::string screen;
    for (size_t i = 0; i < folders.size(); ++i) {
      FERRY_ASSIGN_OR_RETURN(metrics::NodeMetrics node, ReadCacheFolderMetrics(folders[i]));
      TopFrame frame{.folder = folders[i].string(),
                     .now = {.node = std::move(node),
                             .at_s = Now(),
                             .cache_bytes = CacheBytes(meters[i], folders[i])},
                     .before = before[i]};
      if (o.json) {
        screen += DumpPythonJson(TopJson(frame), JsonKeyOrder::kInsertion) + "\n";
      } else {
        for (const std::string& line : RenderTop(frame)) screen += line + "\n";
        screen += "\n";
      }
      before[i] = std::move(frame.now);
    }
    if (terminal) {
      // Home and clear below: the view is redrawn in place.
      std::fputs("\x1b[H\x1b[J", stdout);
      screen += "every " + fmt::format("{:g}", o.interval_s) + " s; Ctrl+C to quit\n";
    }
    std::fputs(screen.c_str(), stdout);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

Command AddTopCommand(CLI::App& parent) {
  auto o = std::make_shared<TopOptions>();
  CLI::App* app =
      parent.add_subcommand("top", "Live view of the processes reading cache folders on this node");
  app->add_option("folders", o->folders,
                  "Cache folders (default: every one under $TMPDIR/ferry-cache)");
  app->add_flag("--json", o->json, "One JSON object per folder and refresh, one per line");
  app->add_option("--interval", o->interval_s, "Seconds between refreshes")
      ->check(CLI::Range(0.05, 3600.0));
  app->add_option("-n,--count", o->count, "Refreshes before exiting (0: until Ctrl+C)")
      ->check(NotNegative());
  AddMetricsPortOptions(*app, o->metrics_port, o->metrics_host);
  return {app, [o] { return RunTop(*o); }};
}

}  // namespace ferry::cli
