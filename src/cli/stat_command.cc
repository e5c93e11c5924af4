// ferry stat URL [--json]: size, etag and modification time of one object.
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/human_size.h"
#include "base/python_json.h"
#include "cli/command.h"
#include "ferry/storage/registry.h"

namespace ferry::cli {
namespace {

struct StatOptions {
  std::string url;
  bool json = false;
};

Result<int> RunStat(const StatOptions& o) {
  FERRY_ASSIGN_OR_RETURN(StoreAndKey target, OpenUrl(o.url));
  FERRY_ASSIGN_OR_RETURN(ObjectInfo info, target.store->Head(target.key));
  std::string mtime;
  if (info.mtime) {
    const std::time_t secs = std::chrono::system_clock::to_time_t(*info.mtime);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    mtime = buf;
  }
  const std::string url = target.store->ToUrl(target.key);
  if (o.json) {
    nlohmann::ordered_json j{
        {"url", url},
        {"size", info.size},
        {"etag", info.etag},
        {"mtime", info.mtime ? nlohmann::ordered_json(mtime) : nlohmann::ordered_json()}};
    std::printf("%s\n", DumpPythonJson(j, JsonKeyOrder::kInsertion).c_str());
    return 0;
  }
  std::printf("url    %s\nsize   %llu (%s)\netag   %s\nmtime  %s\n", url.c_str(),
              static_cast<unsigned long long>(info.size), FormatBytes(info.size).c_str(),
              info.etag.empty() ? "-" : info.etag.c_str(), mtime.empty() ? "-" : mtime.c_str());
  return 0;
}

}  // namespace

Command AddStatCommand(CLI::App& parent) {
  auto o = std::make_shared<StatOptions>();
  CLI::App* app = parent.add_subcommand("stat", "Size, etag and modification time of an object");
  app->add_option("url", o->url, "URL or local path of one object")->required();
  app->add_flag("--json", o->json, "Print one JSON object");
  return {app, [o] { return RunStat(*o); }};
}

}  // namespace ferry::cli
