#include "cache/cache_layout.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <vector>

#include "base/file_util.h"
#include "base/log.h"
#include "format/hash.h"

namespace ferry::internal_cache {
namespace {

// NAME_MAX is 255 on every filesystem we care about; leave room for the ".use"/".dl" suffix.
constexpr size_t kMaxLockName = 240;
// Enough of the basename to recognize it when looking at the folder.
constexpr size_t kReadablePrefix = 200;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string LockName(std::string_view basename) {
  std::string name;
  name.reserve(basename.size());
  for (const char c : basename) {
    if (c == '%') {
      name += "%25";
    } else if (c == '/') {
      name += "%2F";
    } else if (c == '~') {  // reserved for the hashed form below, so names stay distinct
      name += "%7E";
    } else {
      name += c;
    }
  }
  if (name.size() <= kMaxLockName) return name;
  // xxh64 is a known algorithm, so HashHex cannot fail here.
  const std::string digest = HashHex("xxh64", basename).value_or("");
  name.resize(kReadablePrefix);
  return fmt::format("{}~{}", name, digest);
}

Status CheckBasenameIsNotReserved(std::string_view basename) {
  const std::string_view first = basename.substr(0, basename.find('/'));
  if (first == kBookkeepingFolder) {
    return InvalidArgumentError(
        fmt::format("{}: shard basename is inside {}/, which the cache reserves", basename, first));
  }
  if (EndsWith(basename, kTemporarySuffix)) {
    return InvalidArgumentError(
        fmt::format("{}: shard basename ends in {}, which the cache uses for temporaries", basename,
                    kTemporarySuffix));
  }
  return Status::Ok();
}

std::filesystem::path CacheLayout::FilePath(std::string_view basename) const {
  return root_ / std::string(basename);
}

std::filesystem::path CacheLayout::TemporaryPath(std::string_view basename) const {
  std::filesystem::path path = FilePath(basename);
  path += kTemporarySuffix;
  return path;
}

std::filesystem::path CacheLayout::LocksDir() const {
  return root_ / std::string(kBookkeepingFolder) / "locks";
}

std::filesystem::path CacheLayout::UseLockPath(std::string_view basename) const {
  return LocksDir() / (LockName(basename) + ".use");
}

std::filesystem::path CacheLayout::DownloadLockPath(std::string_view basename) const {
  return LocksDir() / (LockName(basename) + ".dl");
}

std::filesystem::path CacheLayout::ProgressPath(std::string_view basename) const {
  return LocksDir() / (LockName(basename) + ".progress");
}

std::filesystem::path CacheLayout::DigestPath(std::string_view basename) const {
  return LocksDir() / (LockName(basename) + ".xxh3");
}

std::filesystem::path CacheLayout::CacheLockPath() const { return LocksDir() / "cache.lock"; }

const CacheModes& Modes() {
  static const CacheModes modes = [] {
    const char* env = std::getenv("FERRY_CACHE_MODE");
    const std::string_view mode = env ? env : "private";
    if (mode == "group") return CacheModes{.folder = 0770, .file = 0660};
    if (mode == "shared") return CacheModes{.folder = 0755, .file = 0644};
    if (mode != "private") {
      Log().warn("FERRY_CACHE_MODE={} is not private, group or shared: using private", mode);
    }
    return CacheModes{};
  }();
  return modes;
}

Status CreateCacheFolders(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (std::filesystem::path p = folder; !p.empty() && !std::filesystem::exists(p, ec);
       p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    // EEXIST: another process made it in between, which is fine.
    if (::mkdir(it->c_str(), Modes().folder) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "create folder", *it);
    }
  }
  return Status::Ok();
}

Status CacheLayout::CreateLocksDir() const { return CreateCacheFolders(LocksDir()); }

std::filesystem::path CacheLayout::ReadersDir() const {
  return root_ / std::string(kBookkeepingFolder) / "readers";
}

Status CacheLayout::CreateReadersDir() const { return CreateCacheFolders(ReadersDir()); }

std::filesystem::path CacheLayout::MetricsDir() const {
  return root_ / std::string(kBookkeepingFolder) / "metrics";
}

std::filesystem::path CacheLayout::SlotsDir() const {
  return root_ / std::string(kBookkeepingFolder) / "slots";
}

std::filesystem::path CacheLayout::OriginPath() const {
  return root_ / std::string(kBookkeepingFolder) / "origin.json";
}

std::filesystem::path CacheLayout::BinaryIndexPath() const {
  return root_ / std::string(kBookkeepingFolder) / "index.bin";
}

std::filesystem::path CacheLayout::MirrorsPath() const {
  return root_ / std::string(kBookkeepingFolder) / "mirrors.json";
}

}  // namespace ferry::internal_cache
