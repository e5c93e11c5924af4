#include "cache/download_progress.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <ctime>
#include <utility>

#include "base/file_util.h"
#include "cache/cache_layout.h"

namespace ferry::internal_cache {

// The shared page. Fields other than those read through atomic_ref are written once, before
// `magic`, and never again.
struct ProgressRecord {
  uint64_t magic;  // kMagic once the rest is written (release)
  uint32_t version;
  uint32_t parts;
  uint64_t size;
  uint64_t dev;  // the temporary file's
  uint64_t ino;
  uint32_t state;    // kRunning, kComplete, kFailed
  uint32_t seq;      // the futex word: moves on every wake-up
  uint32_t waiters;  // readers asleep on seq
  uint32_t unused;
  struct Part {
    uint64_t begin;
    uint64_t end;
    uint64_t landed;   // bytes before this one have landed (begin..end)
    uint64_t wake_at;  // the least mark a sleeping reader waits for (kNobody: none)
  } part[kMaxProgressParts];
};

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMagic = 0x5052474459525246;  // "FRRYDGRP" little-endian
constexpr uint32_t kVersion = 2;
constexpr uint64_t kNobody = UINT64_MAX;
constexpr size_t kRecordBytes = 4096;
static_assert(sizeof(ProgressRecord) <= kRecordBytes);
constexpr uint32_t kRunning = 0;
constexpr uint32_t kComplete = 1;
constexpr uint32_t kFailed = 2;
// A sleeping reader looks again this often even unwoken: whether the writer is still there.
constexpr auto kRecheck = std::chrono::milliseconds(20);

template <typename T>
std::atomic_ref<T> Atomic(T& field) {
  return std::atomic_ref<T>(field);
}

long Futex(uint32_t* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word is shared between processes.
  return ::syscall(SYS_futex, word, op, value, timeout, nullptr, 0);
}

}  // namespace

Result<std::unique_ptr<DownloadProgressWriter>> DownloadProgressWriter::Create(
    const fs::path& path, int tmp_fd, uint64_t size, const std::vector<DownloadPart>& parts) {
  if (parts.empty() || parts.size() > kMaxProgressParts) {
    return InvalidArgumentError(fmt::format("{}: {} parts", path.string(), parts.size()));
  }
  struct stat tmp_stat {};
  if (::fstat(tmp_fd, &tmp_stat) != 0) return ErrnoToStatus(errno, "stat the temporary of", path);
  // Left by a killed download: the download lock is the caller's, so nobody writes it any more.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoToStatus(errno, "unlink", path);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, Modes().file);
  if (fd < 0) return ErrnoToStatus(errno, "create", path);
  // Held until the record goes: readers that can take a shared lock know the writer is gone.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::ftruncate(fd, kRecordBytes) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    ::close(fd);
    return ErrnoToStatus(err, "prepare", path);
  }
  void* map = ::mmap(nullptr, kRecordBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    const int err = errno;
    ::unlink(path.c_str());
    ::close(fd);
    return ErrnoToStatus(err, "map", path);
  }
  auto* record = static_cast<ProgressRecord*>(map);  // zeroed by ftruncate
  record->version = kVersion;
  record->parts = static_cast<uint32_t>(parts.size());
  record->size = size;
  record->dev = tmp_stat.st_dev;
  record->ino = tmp_stat.st_ino;
  for (size_t p = 0; p < parts.size(); ++p) {
    record->part[p] = {parts[p].begin, parts[p].end, parts[p].begin, kNobody};
  }
  Atomic(record->magic).store(kMagic, std::memory_order_release);
  return std::unique_ptr<DownloadProgressWriter>(new DownloadProgressWriter(path, fd, record));
}

DownloadProgressWriter::~DownloadProgressWriter() {
  if (!finished_) Finish(false);
  // Removed while still locked: a reader that opens it from now on finds no file; one that has
  // it open sees the state set above.
  ::unlink(path_.c_str());
  ::munmap(record_, kRecordBytes);
  ::close(fd_);
}

void DownloadProgressWriter::Landed(uint32_t part, uint64_t end) {
  // seq_cst, paired with the reader's: either it sees this mark, or this sees it waiting.
  ProgressRecord::Part& p = record_->part[part];
  Atomic(p.landed).store(end);
  // Only a mark a reader waits for wakes (not every chunk: thousands per shard).
  if (Atomic(record_->waiters).load() != 0 && end >= Atomic(p.wake_at).load()) {
    Atomic(p.wake_at).store(kNobody);
    Wake();
  }
}

void DownloadProgressWriter::Finish(bool complete) {
  finished_ = true;
  Atomic(record_->state).store(complete ? kComplete : kFailed);
  Wake();
}

void DownloadProgressWriter::Wake() {
  Atomic(record_->seq).fetch_add(1);
  Futex(&record_->seq, FUTEX_WAKE, INT_MAX, nullptr);
}

Result<std::optional<std::unique_ptr<DownloadProgressReader>>> DownloadProgressReader::Open(
    const fs::path& record_path, const fs::path& tmp) {
  using Out = std::optional<std::unique_ptr<DownloadProgressReader>>;
  // Read-write: a waiting reader counts itself in the record.
  const int record_fd = ::open(record_path.c_str(), O_RDWR | O_CLOEXEC);
  if (record_fd < 0) {
    if (errno == ENOENT) return Out();
    return ErrnoToStatus(errno, "open", record_path);
  }
  struct stat record_stat {};
  if (::fstat(record_fd, &record_stat) != 0 ||
      record_stat.st_size < static_cast<off_t>(kRecordBytes)) {
    ::close(record_fd);  // being created: nothing to read yet
    return Out();
  }
  void* map = ::mmap(nullptr, kRecordBytes, PROT_READ | PROT_WRITE, MAP_SHARED, record_fd, 0);
  if (map == MAP_FAILED) {
    const int err = errno;
    ::close(record_fd);
    return ErrnoToStatus(err, "map", record_path);
  }
  auto* record = static_cast<ProgressRecord*>(map);
  auto reject = [&]() -> Result<Out> {
    ::munmap(map, kRecordBytes);
    ::close(record_fd);
    return Out();
  };
  if (Atomic(record->magic).load(std::memory_order_acquire) != kMagic ||
      record->version != kVersion || record->parts == 0 || record->parts > kMaxProgressParts) {
    return reject();
  }
  const int tmp_fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (tmp_fd < 0) return reject();  // published or removed since
  struct stat tmp_stat {};
  if (::fstat(tmp_fd, &tmp_stat) != 0 || tmp_stat.st_dev != record->dev ||
      tmp_stat.st_ino != record->ino) {
    ::close(tmp_fd);
    return reject();  // a temporary of another download
  }
  std::unique_ptr<DownloadProgressReader> reader(
      new DownloadProgressReader(tmp, record_fd, tmp_fd, record));
  if (reader->WriterGone() && Atomic(record->state).load() != kComplete) return Out();
  return Out(std::move(reader));
}

DownloadProgressReader::~DownloadProgressReader() {
  ::munmap(record_, kRecordBytes);
  ::close(record_fd_);
  ::close(tmp_fd_);
}

uint64_t DownloadProgressReader::size() const { return record_->size; }

bool DownloadProgressReader::Landed(uint64_t offset, uint64_t length) const {
  const uint64_t end = std::min(record_->size, offset + length);
  if (Atomic(record_->state).load() == kComplete) return true;
  for (uint32_t p = 0; p < record_->parts && offset < end; ++p) {
    ProgressRecord::Part& part = record_->part[p];
    if (offset >= part.end || end <= part.begin) continue;
    if (Atomic(part.landed).load() < std::min(end, part.end)) return false;
  }
  return true;
}

uint64_t DownloadProgressReader::LandedFrom(uint64_t offset) const {
  if (offset >= record_->size) return 0;
  if (Atomic(record_->state).load() == kComplete) return record_->size - offset;
  for (uint32_t p = 0; p < record_->parts; ++p) {
    ProgressRecord::Part& part = record_->part[p];
    if (offset < part.begin || offset >= part.end) continue;
    const uint64_t landed = std::min(Atomic(part.landed).load(), part.end);
    return landed > offset ? landed - offset : 0;
  }
  return 0;
}

void DownloadProgressReader::WaitFor(uint64_t offset, uint64_t length) const {
  // The first part the range still waits on, and the mark it needs there. A want that the
  // writer clears as another reader's is met is looked at again after kRecheck at the latest.
  const uint64_t end = std::min(record_->size, offset + length);
  for (uint32_t p = 0; p < record_->parts && offset < end; ++p) {
    ProgressRecord::Part& part = record_->part[p];
    if (offset >= part.end || end <= part.begin) continue;
    const uint64_t need = std::min(end, part.end);
    if (Atomic(part.landed).load() >= need) continue;
    auto wake_at = Atomic(part.wake_at);
    uint64_t current = wake_at.load();
    while (need < current && !wake_at.compare_exchange_weak(current, need)) {
    }
    return;
  }
}

bool DownloadProgressReader::Ended() const {
  return Atomic(record_->state).load() != kRunning || WriterGone();
}

bool DownloadProgressReader::WriterGone() const {
  if (::flock(record_fd_, LOCK_SH | LOCK_NB) != 0) return false;
  ::flock(record_fd_, LOCK_UN);
  return true;
}

Result<std::string> DownloadProgressReader::Read(
    uint64_t offset, uint64_t length, std::chrono::steady_clock::time_point deadline) const {
  if (offset > record_->size) {
    return OutOfRangeError(
        fmt::format("{}: offset {} is past its {} bytes", tmp_.string(), offset, record_->size));
  }
  length = std::min(length, record_->size - offset);
  while (!Landed(offset, length)) {
    if (Atomic(record_->state).load() == kFailed || WriterGone()) {
      if (Landed(offset, length)) break;  // landed just before the end
      return UnavailableError(fmt::format("{}: its download ended before bytes {} to {} landed",
                                          tmp_.string(), offset, offset + length));
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return DeadlineExceededError(fmt::format("{}: bytes {} to {} have not landed yet",
                                               tmp_.string(), offset, offset + length));
    }
    const auto wait = std::min<std::chrono::nanoseconds>(kRecheck, deadline - now);
    const timespec timeout{.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000),
                           .tv_nsec = static_cast<long>(wait.count() % 1'000'000'000)};
    WaitFor(offset, length);
    Atomic(record_->waiters).fetch_add(1);
    const uint32_t seq = Atomic(record_->seq).load();
    if (!Landed(offset, length) && Atomic(record_->state).load() == kRunning) {
      Futex(&record_->seq, FUTEX_WAIT, seq, &timeout);  // EAGAIN, ETIMEDOUT, EINTR: look again
    }
    Atomic(record_->waiters).fetch_sub(1);
  }
  std::string out(length, '\0');
  uint64_t done = 0;
  while (done < length) {
    const ssize_t n =
        ::pread(tmp_fd_, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "read", tmp_);
    if (n == 0) {
      return DataLossError(
          fmt::format("{}: ends at {}, before bytes that landed", tmp_.string(), offset + done));
    }
    done += static_cast<uint64_t>(n);
  }
  return out;
}

}  // namespace ferry::internal_cache
