// Helpers for the cache tests: small MDS datasets, a "remote" that records, slows down or fails
// reads, and child processes that are always reaped. Test-only.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/file_util.h"
#include "ferry/format/index.h"
#include "ferry/format/mds_writer.h"
#include "ferry/storage/object_store.h"
#include "ferry/storage/registry.h"
#include "format/hash.h"
#include "storage/forwarding_store_testutil.h"

namespace ferry::testing {

struct DatasetSpec {
  int samples = 40;
  size_t sample_bytes = 1500;
  uint64_t size_limit = 8 << 10;
  std::optional<std::string> compression;
  std::vector<std::string> hashes = {"sha1", "xxh64"};
};

/// Writes an MDS dataset into `out` with MdsWriter. Samples are half random bytes (so that
/// compressed shards keep a size of their own) and half a repeated pattern.
inline DatasetDescription WriteDataset(const std::filesystem::path& out, const DatasetSpec& spec) {
  auto writer = MdsWriter::Create({.out = out,
                                   .columns = {{"id", "int"}, {"data", "bytes"}},
                                   .compression = spec.compression,
                                   .hashes = spec.hashes,
                                   .size_limit = spec.size_limit,
                                   .flush_threads = 1});
  EXPECT_TRUE(writer.has_value()) << writer.status().ToString();
  std::mt19937_64 random(42);
  for (int i = 0; i < spec.samples; ++i) {
    std::string data(spec.sample_bytes, 'x');
    for (size_t j = 0; j < data.size() / 2; ++j) data[j] = static_cast<char>(random());
    EXPECT_TRUE((*writer)->Write({{"id", Value(i)}, {"data", Value(Bytes{data})}}).ok());
  }
  auto index = (*writer)->Finish();
  EXPECT_TRUE(index.has_value()) << index.status().ToString();
  return index.value_or(DatasetDescription{});
}

/// True when `path` holds the raw shard `shard` describes (its xxh64 from index.json).
inline bool RawShardIsIntact(const std::filesystem::path& path, const ShardDescription& shard) {
  auto text = ReadFileToString(path);
  if (!text) return false;
  const std::string* want = shard.raw_data.FindHash("xxh64");
  return want != nullptr && HashHex("xxh64", *text).value_or("") == *want;
}

/// Regular files below `folder` outside .ferry/, with their sizes.
inline std::map<std::string, uint64_t> FilesIn(const std::filesystem::path& folder) {
  std::map<std::string, uint64_t> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(folder, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() == ".ferry") {
      it.disable_recursion_pending();
      continue;
    }
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    const uint64_t size = it->file_size(size_ec);
    if (!size_ec) files[it->path().lexically_relative(folder).string()] = size;
  }
  return files;
}

/// Bytes of every file below `folder` outside .ferry/ (shards, temporaries, index.json).
inline uint64_t BytesIn(const std::filesystem::path& folder) {
  uint64_t total = 0;
  for (const auto& [name, size] : FilesIn(folder)) total += size;
  return total;
}

struct TestStoreOptions {
  /// One line per Head/Read, "head <key>" or "read <key> <offset> <length>", appended with
  /// O_APPEND so that several processes can share the file.
  std::filesystem::path log;
  /// Chunks handed to the sink are cut to this size and each is followed by `chunk_delay`.
  size_t chunk_bytes = 0;
  std::chrono::microseconds chunk_delay{0};
  /// Returns an error to fail a Read before it starts.
  std::function<Status(std::string_view key, const ByteRange& range)> fail_read;
  /// Returns an error to fail a Head.
  std::function<Status(std::string_view key)> fail_head;
  /// The MD5 a Read's info says the store sends with `key` (ObjectInfo::checksum, "from"
  /// "test").
  std::function<std::string(std::string_view key)> md5;
  /// Or any checksum it says the store sends with a read of `range`.
  std::function<ObjectChecksum(std::string_view key, const ByteRange& range)> checksum;
  /// May change the bytes of `key` at object offset `offset` on their way to the sink.
  std::function<void(std::string_view key, uint64_t offset, std::string& bytes)> mangle;
};

/// An ObjectStore decorator that records, slows down and fails reads of another store.
class TestStore : public ForwardingStore {
 public:
  TestStore(std::shared_ptr<ObjectStore> inner, TestStoreOptions options)
      : ForwardingStore(std::move(inner)), options_(std::move(options)) {}

  Result<ObjectInfo> Head(std::string_view key) override {
    Record(fmt::format("head {}\n", key));
    if (options_.fail_head) FERRY_RETURN_IF_ERROR(options_.fail_head(key));
    return inner().Head(key);
  }
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    Record(fmt::format("read {} {} {}\n", key, range.offset,
                       range.length ? std::to_string(*range.length) : "-"));
    if (options_.fail_read) FERRY_RETURN_IF_ERROR(options_.fail_read(key, range));
    Result<ObjectInfo> info = [&] {
      if (options_.chunk_bytes == 0 && options_.chunk_delay.count() == 0 && !options_.mangle) {
        return inner().Read(key, range, sink);
      }
      uint64_t offset = range.offset;
      return inner().Read(key, range, [&](std::string_view chunk) -> Status {
        const size_t step = options_.chunk_bytes == 0 ? chunk.size() : options_.chunk_bytes;
        while (!chunk.empty()) {
          const std::string_view piece = chunk.substr(0, step);
          if (options_.mangle) {
            std::string bytes(piece);
            options_.mangle(key, offset, bytes);
            FERRY_RETURN_IF_ERROR(sink(bytes));
          } else {
            FERRY_RETURN_IF_ERROR(sink(piece));
          }
          offset += piece.size();
          chunk.remove_prefix(piece.size());
          std::this_thread::sleep_for(options_.chunk_delay);
        }
        return Status::Ok();
      });
    }();
    if (info && options_.md5) {
      info->checksum = {.kind = ChecksumKind::kMd5, .hex = options_.md5(key), .from = "test"};
    }
    if (info && options_.checksum) info->checksum = options_.checksum(key, range);
    return info;
  }

 private:
  void Record(const std::string& line) {
    if (options_.log.empty()) return;
    const int fd = ::open(options_.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    // One write per line: appends of a few bytes are not interleaved.
    (void)!::write(fd, line.data(), line.size());
    ::close(fd);
  }

  TestStoreOptions options_;
};

/// Mounts a tmpfs of `bytes` at `folder` in a mount namespace of the calling process's own (a
/// forked test child's: single-threaded, as unshare needs), as root or, unprivileged, in a user
/// namespace of its own. Returns "" on success, else why not (no namespaces to be had here).
inline std::string MountTinyTmpfs(const std::filesystem::path& folder, uint64_t bytes) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWNS) != 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      return fmt::format("unshare: {}", std::strerror(errno));
    }
    const auto write = [](const char* path, const std::string& text) {
      const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
      const bool ok =
          fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      if (fd >= 0) ::close(fd);
      return ok;
    };
    if (!write("/proc/self/setgroups", "deny") ||
        !write("/proc/self/uid_map", fmt::format("{} {} 1", uid, uid)) ||
        !write("/proc/self/gid_map", fmt::format("{} {} 1", gid, gid))) {
      return "cannot map this user into a user namespace";
    }
  }
  // Mounts made here stay here.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return fmt::format("make / private: {}", std::strerror(errno));
  }
  if (::mount("tmpfs", folder.c_str(), "tmpfs", 0, fmt::format("size={}", bytes).c_str()) != 0) {
    return fmt::format("mount tmpfs: {}", std::strerror(errno));
  }
  return "";
}

/// The store and key of local folder `folder` (a FileStore, the tests' "remote").
inline StoreAndKey LocalRemote(const std::filesystem::path& folder) {
  auto opened = OpenUrl(folder.string());
  EXPECT_TRUE(opened.has_value()) << opened.status().ToString();
  return opened.value_or(StoreAndKey{});
}

/// Lines of a TestStore log that start with "<op> <key>" (op "read" or "head"), by key.
inline std::map<std::string, int> CountLogged(const std::filesystem::path& log,
                                              std::string_view op = "read") {
  std::map<std::string, int> counts;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string what, key;
    fields >> what >> key;
    if (what == op) ++counts[key];
  }
  return counts;
}

/// Reads of keys ending in `suffix`, over the whole log.
inline int CountReadsEndingWith(const std::filesystem::path& log, std::string_view suffix) {
  int n = 0;
  for (const auto& [key, count] : CountLogged(log)) {
    if (key.size() >= suffix.size() && key.substr(key.size() - suffix.size()) == suffix) {
      n += count;
    }
  }
  return n;
}

/// Child processes of one test, killed (SIGKILL) and reaped when the test ends however it ends:
/// a failing assertion never leaves a process behind.
class Children {
 public:
  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children() {
    for (const pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      int status;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

  /// Runs `body` in a forked child; its result is the child's exit status. The child leaves
  /// with _exit: no atexit handlers or destructors of the parent's objects run twice.
  pid_t Spawn(const std::function<int()>& body) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(body());
    EXPECT_GT(pid, 0) << "fork failed";
    if (pid > 0) pids_.push_back(pid);
    return pid;
  }

  /// Waits up to `timeout` for `pid`: its exit status, 128 + the signal that ended it, or -1
  /// after killing it on time-out.
  int Wait(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      const pid_t got = ::waitpid(pid, &status, WNOHANG);
      if (got == pid) {
        std::erase(pids_, pid);
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
      }
      if (got < 0 && errno != EINTR) return -1;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        std::erase(pids_, pid);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  /// SIGKILL and reap.
  void Kill(pid_t pid) {
    ::kill(pid, SIGKILL);
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::erase(pids_, pid);
  }

 private:
  std::vector<pid_t> pids_;
};

/// A pipe for one-byte signals between a test and its children.
class Pipe {
 public:
  Pipe() {
    if (::pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
  }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  void Send() { (void)!::write(fds_[1], "x", 1); }
  /// True when a byte came; false at end of file (every writer closed) or on error.
  bool Receive() {
    char c;
    for (;;) {
      const ssize_t n = ::read(fds_[0], &c, 1);
      if (n < 0 && errno == EINTR) continue;
      return n == 1;
    }
  }
  void CloseRead() {
    if (fds_[0] >= 0) ::close(std::exchange(fds_[0], -1));
  }
  int read_fd() const { return fds_[0]; }
  int write_fd() const { return fds_[1]; }
  void CloseWrite() {
    if (fds_[1] >= 0) ::close(std::exchange(fds_[1], -1));
  }

 private:
  int fds_[2] = {-1, -1};
};

}  // namespace ferry::testing
