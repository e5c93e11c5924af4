// ferry ls URL [-r] [-l]: what is at a URL. A URL naming an object lists that object; otherwise
// it is a folder and its entries are listed (one level, sub-folders ending in '/'; everything
// below with -r). Names are shown relative to the folder; -l adds size and modification time.
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <memory>

#include "base/human_size.h"
#include "cli/command.h"
#include "ferry/storage/registry.h"

namespace ferry::cli {
namespace {

struct LsOptions {
  std::string url;
  bool recursive = false;
  bool long_format = false;
};

std::string FormatTime(const std::optional<std::chrono::system_clock::time_point>& t) {
  if (!t) return "                   -";
  const std::time_t secs = std::chrono::system_clock::to_time_t(*t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

Result<int> RunLs(const LsOptions& o) {
  FERRY_ASSIGN_OR_RETURN(StoreAndKey target, OpenUrl(o.url));
  ObjectStore& store = *target.store;
  std::string prefix = target.key;
  if (!prefix.empty() && !prefix.ends_with('/')) {
    if (auto info = store.Head(prefix); info.has_value()) {
      std::printf(
          "%s\n",
          o.long_format
              ? fmt::format("{:>14}  {}  {}", info->size, FormatTime(info->mtime), prefix).c_str()
              : prefix.c_str());
      return 0;
    }
    prefix += '/';
  }
  FERRY_ASSIGN_OR_RETURN(ListResult listing, store.List(prefix, o.recursive));
  if (listing.objects.empty() && listing.prefixes.empty() && !target.key.empty()) {
    return NotFoundError(fmt::format("{}: no such object or folder", store.ToUrl(target.key)));
  }
  uint64_t total = 0;
  std::string out;
  for (const auto& p : listing.prefixes) {
    const std::string name = p.substr(prefix.size());
    out += o.long_format ? fmt::format("{:>14}  {}  {}\n", "DIR", FormatTime(std::nullopt), name)
                         : name + "\n";
  }
  for (const auto& obj : listing.objects) {
    const std::string name = obj.key.substr(prefix.size());
    total += obj.size;
    out += o.long_format ? fmt::format("{:>14}  {}  {}\n", obj.size, FormatTime(obj.mtime), name)
                         : name + "\n";
  }
  std::fputs(out.c_str(), stdout);
  if (o.long_format) {
    std::printf("%zu objects, %s\n", listing.objects.size(), FormatBytes(total).c_str());
  }
  return 0;
}

}  // namespace

Command AddLsCommand(CLI::App& parent) {
  auto o = std::make_shared<LsOptions>();
  CLI::App* app = parent.add_subcommand(
      "ls",
      "List objects at a URL: a local path, s3://, az://, abfs[s]://, gs:// (http(s):// has "
      "no listing)");
  app->add_option("url", o->url, "URL or local path")->required();
  app->add_flag("-r,--recursive", o->recursive, "Everything below, not one level");
  app->add_flag("-l,--long", o->long_format, "Show sizes and modification times");
  return {app, [o] { return RunLs(*o); }};
}

}  // namespace ferry::cli
