#include "cache/cache_layout.h"

#include <fmt/format.h>

#include <system_error>

#include "base/file_util.h"
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

std::filesystem::path CacheLayout::CacheLockPath() const { return LocksDir() / "cache.lock"; }

Status CacheLayout::CreateLocksDir() const {
  std::error_code ec;
  std::filesystem::create_directories(LocksDir(), ec);
  if (ec) return ErrnoToStatus(ec.value(), "create folder", LocksDir());
  return Status::Ok();
}

}  // namespace ferry::internal_cache
