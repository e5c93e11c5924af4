// FileStore: the local filesystem as an ObjectStore (scheme "file", and plain paths).
//
// This is the reference backend: the smallest complete ObjectStore, with its registration at
// the bottom. Copy its shape to add a new one.
//
// One store serves the whole filesystem: a key is an absolute path without its leading '/'
// ("data/set/shard.00000.mds"), so OpenUrl("/data/set") gives key "data/set" and listing a
// prefix means walking the folder that holds it. Keys with "..", "." or empty components are
// refused, so a key from a listing or an index can never name a file outside the path asked for.
// Writes go to a temporary name in the destination folder and are renamed into place.
//
// Thread-safety: stateless; every method may run concurrently.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <system_error>

#include "base/file_util.h"
#include "ferry/storage/object_store.h"
#include "ferry/storage/registry.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

constexpr size_t kChunk = 1 << 20;

// "a/b" -> "/a/b" after checking every component.
Result<fs::path> PathOf(std::string_view key) {
  if (key.empty()) return fs::path("/");
  size_t start = 0;
  while (start <= key.size()) {
    const size_t slash = key.find('/', start);
    const std::string_view part = key.substr(start, slash - start);
    if ((part.empty() && slash != std::string_view::npos) || part == "." || part == "..") {
      return InvalidArgumentError(
          fmt::format("file:///{}: key has an empty, '.' or '..' component", key));
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return fs::path("/") / std::string(key);
}

ObjectInfo InfoFromStat(std::string key, const struct stat& st) {
  ObjectInfo info;
  info.key = std::move(key);
  info.size = static_cast<uint64_t>(st.st_size);
  info.mtime = FileTime(st.st_mtim);
  return info;
}

class FileStore : public ObjectStore {
 public:
  std::string_view scheme() const override { return "file"; }

  std::string ToUrl(std::string_view key) const override { return fmt::format("file:///{}", key); }

  std::optional<fs::path> LocalPath(std::string_view key) const override {
    auto path = PathOf(key);
    if (!path) return std::nullopt;
    return *std::move(path);
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    FERRY_ASSIGN_OR_RETURN(fs::path path, PathOf(key));
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat", path);
    if (!S_ISREG(st.st_mode)) {
      return NotFoundError(fmt::format("{}: not a file", ToUrl(key)));
    }
    return InfoFromStat(std::string(key), st);
  }

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    FERRY_ASSIGN_OR_RETURN(fs::path path, PathOf(key));
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoToStatus(errno, "open", path);
    std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* p) {
      ::close(*p);
      delete p;
    });
    struct stat st;
    if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, "stat", path);
    if (!S_ISREG(st.st_mode)) return NotFoundError(fmt::format("{}: not a file", ToUrl(key)));
    ObjectInfo info = InfoFromStat(std::string(key), st);
    if (range.offset > info.size) {
      return OutOfRangeError(fmt::format("{}: offset {} is past the end ({} bytes)", ToUrl(key),
                                         range.offset, info.size));
    }
    const uint64_t end =
        range.length ? std::min(info.size, range.offset + *range.length) : info.size;
    std::string buffer(static_cast<size_t>(std::min<uint64_t>(kChunk, end - range.offset)), '\0');
    for (uint64_t offset = range.offset; offset < end;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), end - offset));
      const ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, "read", path);
      }
      if (n == 0) {
        return DataLossError(fmt::format("{}: file shrank while it was read", ToUrl(key)));
      }
      FERRY_RETURN_IF_ERROR(sink(std::string_view(buffer.data(), static_cast<size_t>(n))));
      offset += static_cast<uint64_t>(n);
    }
    return info;
  }

  Status Write(std::string_view key, const ByteSource& source) override {
    FERRY_ASSIGN_OR_RETURN(fs::path path, PathOf(key));
    if (key.empty() || key.back() == '/') {
      return InvalidArgumentError(fmt::format("{}: not a file name", ToUrl(key)));
    }
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) return ErrnoToStatus(ec.value(), "create folder", path.parent_path());
    FERRY_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
    std::string buffer(static_cast<size_t>(std::min<uint64_t>(kChunk, source.size)), '\0');
    for (uint64_t offset = 0; offset < source.size;) {
      auto n =
          source.read(offset, buffer.data(),
                      static_cast<size_t>(std::min<uint64_t>(buffer.size(), source.size - offset)));
      if (!n) return n.status();
      if (*n == 0) {
        return DataLossError(
            fmt::format("{}: the source ended at {} of {} bytes", ToUrl(key), offset, source.size));
      }
      FERRY_RETURN_IF_ERROR(file.Write(std::string_view(buffer.data(), *n)));
      offset += *n;
    }
    return file.Commit();
  }

  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    // Walk the folder that holds the prefix; keep what starts with the prefix.
    const size_t slash = prefix.rfind('/');
    const std::string dir_key(slash == std::string_view::npos ? "" : prefix.substr(0, slash));
    FERRY_ASSIGN_OR_RETURN(fs::path dir, PathOf(dir_key));
    ListResult out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return out;
    const std::string base = dir_key.empty() ? "" : dir_key + "/";
    auto visit = [&](const fs::directory_entry& entry, fs::recursive_directory_iterator* it) {
      const std::string key = base + entry.path().lexically_relative(dir).generic_string();
      if (entry.is_directory(ec)) {
        if (!recursive) {
          if (key.starts_with(prefix)) out.prefixes.push_back(key + "/");
          if (it != nullptr) it->disable_recursion_pending();
        } else if (it != nullptr && !(key + "/").starts_with(prefix) &&
                   !std::string_view(prefix).starts_with(key + "/")) {
          it->disable_recursion_pending();  // cannot hold a match
        }
        return;
      }
      if (!entry.is_regular_file(ec) || !key.starts_with(prefix)) return;
      struct stat st;
      if (::stat(entry.path().c_str(), &st) == 0) out.objects.push_back(InfoFromStat(key, st));
    };
    if (recursive) {
      for (auto it = fs::recursive_directory_iterator(dir, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        visit(*it, &it);
      }
    } else {
      for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
           it.increment(ec)) {
        visit(*it, nullptr);
      }
    }
    if (ec) return ErrnoToStatus(ec.value(), "list folder", dir);
    std::sort(out.objects.begin(), out.objects.end(),
              [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    std::sort(out.prefixes.begin(), out.prefixes.end());
    return out;
  }

  Status Remove(std::string_view key) override {
    FERRY_ASSIGN_OR_RETURN(fs::path path, PathOf(key));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoToStatus(errno, "remove", path);
    return Status::Ok();
  }
};

Result<StoreAndKey> OpenFileUrl(std::string_view url) {
  static const auto store = std::make_shared<FileStore>();
  std::string path;
  if (url.starts_with("file://")) {
    path = std::string(url.substr(7));
    if (!path.starts_with("/")) {
      return InvalidArgumentError(
          fmt::format("{}: a file URL needs an absolute path (file:///...)", url));
    }
  } else {
    std::error_code ec;
    path = fs::absolute(fs::path(url), ec).lexically_normal().generic_string();
    if (ec) return InvalidArgumentError(fmt::format("{}: {}", url, ec.message()));
  }
  // Keep a trailing '/' (it means "the folder" to listing and copying).
  const bool folder = path.size() > 1 && path.back() == '/';
  std::string key = fs::path(path).lexically_normal().generic_string();
  while (key.starts_with("/")) key.erase(0, 1);
  while (key.ends_with("/")) key.pop_back();
  if (folder && !key.empty()) key += '/';
  return StoreAndKey{store, std::move(key)};
}

}  // namespace

const StoreRegistration kFileRegistration("file", &OpenFileUrl);

}  // namespace ferry
