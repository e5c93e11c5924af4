#include "metrics/metrics_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>

#include "base/file_util.h"

namespace ferry::metrics {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'F', 'R', 'Y', 'M', 'E', 'T', '0', '1'};
constexpr uint32_t kEntrySize = 64;
constexpr size_t kHeaderSize = 128;
constexpr uint32_t kCapacity = (kMetricsFileSize - kHeaderSize) / kEntrySize;
constexpr size_t kLabelOffset = 48;
constexpr size_t kLabelSize = 80;
constexpr size_t kKindOffset = 48;
// The kinds of an entry.
constexpr char kCounterKind = 0;
constexpr char kGaugeKind = 1;
constexpr char kLargestGaugeKind = 2;
constexpr size_t kValueOffset = 56;
constexpr size_t kCountOffset = 32;
constexpr size_t kUpdatedOffset = 40;

template <typename T>
std::atomic_ref<T> Word(char* map, size_t offset) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(map + offset));
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<MetricsFileWriter> MetricsFileWriter::Create(const fs::path& folder, std::string_view label,
                                                    unsigned mode) {
  static std::atomic<uint32_t> counter{0};
  const std::string stem =
      fmt::format("{}.{:08x}.{}", ::getpid(), std::random_device{}(), counter.fetch_add(1));
  const fs::path tmp = folder / ("tmp." + stem);
  const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoToStatus(errno, "creating the metrics file", tmp);
  MetricsFileWriter w;
  w.fd_ = fd;
  w.path_ = tmp;
  if (::ftruncate(fd, kMetricsFileSize) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(error, "sizing the metrics file", tmp);
  }
  void* map = ::mmap(nullptr, kMetricsFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(error, "mapping the metrics file", tmp);
  }
  w.map_ = static_cast<char*>(map);
  std::memcpy(w.map_, kMagic, sizeof(kMagic));
  const uint32_t entry_size = kEntrySize, capacity = kCapacity;
  const int64_t pid = ::getpid(), started = UnixMs();
  std::memcpy(w.map_ + 8, &entry_size, 4);
  std::memcpy(w.map_ + 12, &capacity, 4);
  std::memcpy(w.map_ + 16, &pid, 8);
  std::memcpy(w.map_ + 24, &started, 8);
  std::memcpy(w.map_ + kLabelOffset, label.data(), std::min(label.size(), kLabelSize - 1));
  Word<int64_t>(w.map_, kUpdatedOffset).store(started, std::memory_order_relaxed);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(error, "locking the metrics file", tmp);
  }
  // Readers list only "proc." names: what they see is whole and already locked.
  const fs::path final_path = folder / ("proc." + stem);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(error, "naming the metrics file", final_path);
  }
  w.path_ = final_path;
  return w;
}

MetricsFileWriter::MetricsFileWriter(MetricsFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      map_(std::exchange(other.map_, nullptr)),
      count_(std::exchange(other.count_, 0)),
      slots_(std::move(other.slots_)) {}

MetricsFileWriter& MetricsFileWriter::operator=(MetricsFileWriter&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    map_ = std::exchange(other.map_, nullptr);
    count_ = std::exchange(other.count_, 0);
    slots_ = std::move(other.slots_);
  }
  return *this;
}

void MetricsFileWriter::Publish(const std::vector<Metric>& values,
                                const std::map<std::string, int64_t>& base) {
  if (map_ == nullptr) return;
  for (const Metric& m : values) {
    int64_t value = m.value;
    if (!m.gauge) {
      if (auto it = base.find(m.name); it != base.end()) value -= it->second;
    }
    auto slot = slots_.find(m.name);
    if (slot == slots_.end()) {
      if (m.name.size() > kMetricsFileMaxName || count_ == kCapacity) continue;
      char* entry = map_ + kHeaderSize + count_ * kEntrySize;
      std::memcpy(entry, m.name.data(), m.name.size());
      entry[kKindOffset] =
          static_cast<char>(!m.gauge                                ? kCounterKind
                            : m.across == AcrossProcesses::kLargest ? kLargestGaugeKind
                                                                    : kGaugeKind);
      Word<int64_t>(entry, kValueOffset).store(value, std::memory_order_relaxed);
      slot = slots_.emplace(m.name, count_).first;
      // Release: a reader that sees the count sees the name and kind written above.
      Word<uint64_t>(map_, kCountOffset).store(++count_, std::memory_order_release);
    }
    Word<int64_t>(map_ + kHeaderSize + slot->second * kEntrySize, kValueOffset)
        .store(value, std::memory_order_relaxed);
  }
  Word<int64_t>(map_, kUpdatedOffset).store(UnixMs(), std::memory_order_release);
}

void MetricsFileWriter::Abandon() {
  if (map_ != nullptr) ::munmap(map_, kMetricsFileSize);
  if (fd_ >= 0) ::close(fd_);
  map_ = nullptr;
  fd_ = -1;
}

void MetricsFileWriter::Close() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
  Abandon();
}

Result<MetricsFileContents> ReadMetricsFile(int fd, const fs::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, "stat", path);
  if (static_cast<size_t>(st.st_size) < kMetricsFileSize) {
    return DataLossError(fmt::format("{}: a metrics file of {} bytes, not {}", path.string(),
                                     st.st_size, kMetricsFileSize));
  }
  void* map = ::mmap(nullptr, kMetricsFileSize, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return ErrnoToStatus(errno, "mapping", path);
  // The mapping is read-only; atomic_ref needs a non-const object, and loads never write.
  char* m = static_cast<char*>(map);
  Result<MetricsFileContents> result = [&]() -> Result<MetricsFileContents> {
    uint32_t entry_size = 0, capacity = 0;
    std::memcpy(&entry_size, m + 8, 4);
    std::memcpy(&capacity, m + 12, 4);
    if (std::memcmp(m, kMagic, sizeof(kMagic)) != 0 || entry_size != kEntrySize ||
        capacity != kCapacity) {
      return DataLossError(fmt::format("{}: not a ferry metrics file", path.string()));
    }
    MetricsFileContents c;
    std::memcpy(&c.pid, m + 16, 8);
    std::memcpy(&c.started_unix_ms, m + 24, 8);
    c.label.assign(m + kLabelOffset, strnlen(m + kLabelOffset, kLabelSize));
    const uint64_t count = std::min<uint64_t>(
        Word<uint64_t>(m, kCountOffset).load(std::memory_order_acquire), kCapacity);
    c.updated_unix_ms = Word<int64_t>(m, kUpdatedOffset).load(std::memory_order_acquire);
    for (uint64_t i = 0; i < count; ++i) {
      char* entry = m + kHeaderSize + i * kEntrySize;
      std::string name(entry, strnlen(entry, kMetricsFileMaxName + 1));
      const int64_t value = Word<int64_t>(entry, kValueOffset).load(std::memory_order_relaxed);
      const char kind = entry[kKindOffset];
      if (kind == kLargestGaugeKind) c.largest.insert(name);
      (kind == kCounterKind ? c.counters : c.gauges)[std::move(name)] = value;
    }
    return c;
  }();
  ::munmap(map, kMetricsFileSize);
  return result;
}

}  // namespace ferry::metrics
