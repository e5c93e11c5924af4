#include "ferry/metrics/node_metrics.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "base/fork_guard.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/stoppable_sleep.h"
#include "ferry/metrics/metrics.h"
#include "metrics/metrics_file.h"

namespace ferry::metrics {
namespace {

namespace fs = std::filesystem;

constexpr auto kPublishPeriod = std::chrono::milliseconds(100);
// A "tmp." file is renamed within microseconds of its creation; one this old was left by a
// process killed in between.
constexpr auto kStaleTemporary = std::chrono::seconds(60);

constexpr std::string_view kProcessPrefix = "proc.";
constexpr std::string_view kTemporaryPrefix = "tmp.";
constexpr std::string_view kTotalsName = kNodeTotalsFile;
constexpr std::string_view kTotalsLockName = "totals.lock";

using ValueMap = std::map<std::string, int64_t>;

std::string DefaultLabel() {
  std::string comm;
  if (auto text = ReadFileToString("/proc/self/comm"); text.ok()) comm = *text;
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == ' ')) comm.pop_back();
  return comm.empty() ? "process" : comm;
}

// ---- The folder's totals: what exited processes counted. ----

struct Totals {
  ValueMap counters;
  std::set<std::string> folded;  // files counted here and not yet removed (or just removed)
};

Result<Totals> LoadTotals(const fs::path& folder) {
  const fs::path path = folder / kTotalsName;
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return Totals{};
    return text.status();
  }
  Totals totals;
  try {
    const nlohmann::json j = nlohmann::json::parse(*text);
    for (const auto& [name, value] : j.at("counters").items()) {
      totals.counters[name] = value.get<int64_t>();
    }
    for (const auto& name : j.at("folded")) totals.folded.insert(name.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(
        fmt::format("{}: not the totals of exited processes ({}); remove it to start them afresh",
                    path.string(), e.what()));
  }
  return totals;
}

Status SaveTotals(const fs::path& folder, const Totals& totals, unsigned mode) {
  nlohmann::json j;
  j["counters"] = totals.counters;
  j["folded"] = totals.folded;
  return WriteFileAtomically(folder / kTotalsName, j.dump(), mode);
}

// flock on totals.lock, held while totals.json is read-modified-written and while a reader
// sums (so that a file is never counted both as live and as folded, nor as neither).
class TotalsLock {
 public:
  // A folder where the lock file cannot be opened for writing (read-only) yields an unheld lock:
  // nothing is folded. So does a lock held for over 2 s - by a process stuck, or a forked child
  // that inherited its descriptor: the counters wait for a later fold rather than hang the
  // caller (a release holds the publisher's mutex, which fork() takes too).
  TotalsLock(const fs::path& folder, unsigned mode) {
    const fs::path path = folder / kTotalsLockName;
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, mode);
    if (fd_ < 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() > deadline) {
        Log().warn("metrics: {}: locked by another process for over 2 s; folding later",
                   path.string());
        ::close(fd_);
        fd_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~TotalsLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  TotalsLock(const TotalsLock&) = delete;
  TotalsLock& operator=(const TotalsLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

void AddCounters(ValueMap& into, const ValueMap& counters) {
  for (const auto& [name, value] : counters) into[name] += value;
}

// ---- This process's publisher. ----

struct PublishedFolder {
  int refs = 0;
  unsigned mode = 0600;  // of the folder's files
  MetricsFileWriter writer;
  ValueMap base;  // the counters when this process began publishing here: not the folder's
};

struct Publisher {
  Mutex mu;
  std::map<fs::path, PublishedFolder> folders GUARDED_BY(mu);
  std::string label GUARDED_BY(mu);  // after the program's name
  std::unique_ptr<std::jthread> thread GUARDED_BY(mu);
  bool exit_hook GUARDED_BY(mu) = false;
};

void ForgetInChild();

Publisher& ThePublisher() {
  static auto* publisher = [] {
    auto* p = new Publisher();  // never destroyed: publications may outlive static destructors
    LockAcrossFork(p->mu, ForgetInChild);
    return p;
  }();
  return *publisher;
}

// A forked child publishes nothing of its parent's: it drops the parent's files (keeping their
// locks, which are the parent's) and its thread, which does not exist in the child.
void ForgetInChild() NO_THREAD_SAFETY_ANALYSIS {
  Publisher& p = ThePublisher();
  for (auto& [folder, published] : p.folders) published.writer.Abandon();
  p.folders.clear();
  (void)p.thread.release();  // NOLINT: joining a thread of the parent's would never return
}

void PublishAll(Publisher& p) EXCLUDES(p.mu) {
  const std::vector<Metric> all = All();  // before the lock: All() takes the registry's
  MutexLock lock(p.mu);
  for (auto& [folder, published] : p.folders) published.writer.Publish(all, published.base);
}

void PublishLoop(std::stop_token stop) {
  Publisher& p = ThePublisher();
  while (SleepUnlessStopped(kPublishPeriod, stop)) PublishAll(p);
}

// Folds this process's counters in `published` into the folder's totals, removes its file.
void FoldOwn(const fs::path& folder, PublishedFolder& published, const std::vector<Metric>& all) {
  published.writer.Publish(all, published.base);
  ValueMap counters;
  for (const Metric& m : all) {
    if (m.gauge) continue;
    const auto base = published.base.find(m.name);
    counters[m.name] = m.value - (base == published.base.end() ? 0 : base->second);
  }
  const TotalsLock lock(folder, published.mode);
  Status status =
      lock.held()
          ? Status::Ok()
          : InternalError(fmt::format("{}: cannot lock {}", folder.string(), kTotalsLockName));
  if (status.ok()) {
    auto totals = LoadTotals(folder);
    if (totals.ok()) {
      AddCounters(totals->counters, counters);
      totals->folded.insert(published.writer.path().filename().string());
      status = SaveTotals(folder, *totals, published.mode);
    } else {
      status = totals.status();
    }
  }
  if (status.ok()) {
    ::unlink(published.writer.path().c_str());
  } else {
    // The file stays; once this process is gone, a reader folds it.
    Log().warn("metrics: {}", status.ToString());
  }
  published.writer.Close();
}

void StopThread(Publisher& p) EXCLUDES(p.mu) {
  std::unique_ptr<std::jthread> thread;
  {
    MutexLock lock(p.mu);
    if (!p.folders.empty()) return;
    thread = std::move(p.thread);
  }
  thread.reset();  // requests stop and joins, outside the lock the thread takes
}

void FoldAllAtExit() {
  Publisher& p = ThePublisher();
  std::unique_ptr<std::jthread> thread;
  {
    MutexLock lock(p.mu);
    thread = std::move(p.thread);
  }
  thread.reset();
  const std::vector<Metric> all = All();
  MutexLock lock(p.mu);
  for (auto& [folder, published] : p.folders) {
    FoldOwn(folder, published, all);
  }
  p.folders.clear();
}

// The names of the files this process publishes to `folder`.
std::set<std::string> OwnFiles(const fs::path& folder) {
  Publisher& p = ThePublisher();
  MutexLock lock(p.mu);
  std::set<std::string> out;
  if (auto it = p.folders.find(folder); it != p.folders.end()) {
    out.insert(it->second.writer.path().filename().string());
  }
  return out;
}

Result<MetricsFileContents> ReadOwn(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "opening", path);
  auto contents = ReadMetricsFile(fd, path);
  ::close(fd);
  return contents;
}

void AddLive(NodeMetrics& node, MetricsFileContents contents) {
  ProcessMetrics process{.pid = contents.pid,
                         .label = std::move(contents.label),
                         .started_unix_ms = contents.started_unix_ms,
                         .updated_unix_ms = contents.updated_unix_ms,
                         .values = std::move(contents.counters)};
  AddCounters(node.values, process.values);
  for (const auto& [gauge, value] : contents.gauges) {
    int64_t& total = node.values[gauge];
    total = contents.largest.contains(gauge) ? std::max(total, value) : total + value;
    node.gauges.insert(gauge);
  }
  process.values.merge(contents.gauges);
  node.processes.push_back(std::move(process));
}

}  // namespace

Result<NodePublication> NodePublication::Start(const fs::path& folder, unsigned file_mode) {
  Publisher& p = ThePublisher();
  bool publishing = false;  // there already: another open of the same folder
  {
    MutexLock lock(p.mu);
    publishing = p.folders.contains(folder);
  }
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "creating the metrics folder", folder);
    }
  } else if (!publishing) {
    // Processes killed since (SIGKILL runs no exit hook) left their files: folded into the
    // totals now, as a reader would, or a job preempted again and again would fill the folder -
    // and the cache_limit it is counted in - with them. Once per folder and process: a dataset
    // opened again does not read the whole folder again.
    if (auto folded = ReadNodeMetrics(folder, file_mode); !folded.ok()) {
      Log().debug("metrics: {}", folded.status().ToString());
    }
  }
  const std::vector<Metric> all = All();
  MutexLock lock(p.mu);
  auto it = p.folders.find(folder);
  if (it == p.folders.end()) {
    const std::string label = p.label.empty() ? DefaultLabel() : DefaultLabel() + " " + p.label;
    FERRY_ASSIGN_OR_RETURN(MetricsFileWriter writer,
                           MetricsFileWriter::Create(folder, label, file_mode));
    ValueMap base;
    for (const Metric& m : all) {
      if (!m.gauge) base[m.name] = m.value;
    }
    PublishedFolder published{
        .refs = 0, .mode = file_mode, .writer = std::move(writer), .base = std::move(base)};
    published.writer.Publish(all, published.base);
    it = p.folders.emplace(folder, std::move(published)).first;
  }
  ++it->second.refs;
  if (!p.thread) p.thread = std::make_unique<std::jthread>(PublishLoop);
  if (!p.exit_hook) {
    p.exit_hook = true;
    std::atexit(FoldAllAtExit);
  }
  return NodePublication(folder, ::getpid());
}

NodePublication::NodePublication(NodePublication&& other) noexcept
    : folder_(std::exchange(other.folder_, {})), pid_(other.pid_) {}

NodePublication& NodePublication::operator=(NodePublication&& other) noexcept {
  if (this != &other) {
    Release();
    folder_ = std::exchange(other.folder_, {});
    pid_ = other.pid_;
  }
  return *this;
}

void NodePublication::Release() {
  if (folder_.empty()) return;
  const fs::path folder = std::exchange(folder_, {});
  // A copy inherited through fork() is the parent's: the child's own publication of the same
  // folder, if any, is not its to release.
  if (pid_ != ::getpid()) return;
  Publisher& p = ThePublisher();
  const std::vector<Metric> all = All();
  {
    MutexLock lock(p.mu);
    auto it = p.folders.find(folder);
    // Gone: a fork since (the child does not own the parent's publications) or exit.
    if (it == p.folders.end() || --it->second.refs > 0) return;
    FoldOwn(folder, it->second, all);
    p.folders.erase(it);
  }
  StopThread(p);
}

void FlushNodeMetrics() { PublishAll(ThePublisher()); }

void SetProcessLabel(std::string label) {
  Publisher& p = ThePublisher();
  MutexLock lock(p.mu);
  p.label = std::move(label);
}

Result<NodeMetrics> ReadNodeMetrics(const fs::path& folder, unsigned file_mode) {
  NodeMetrics node;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return node;
  FlushNodeMetrics();  // this process's own figures, as of now
  const std::set<std::string> own = OwnFiles(folder);
  const TotalsLock lock(folder, file_mode);
  Totals totals;
  if (lock.held()) {
    FERRY_ASSIGN_OR_RETURN(totals, LoadTotals(folder));
  } else if (auto loaded = LoadTotals(folder); loaded.ok()) {
    totals = std::move(*loaded);
  }
  bool dirty = false;
  std::vector<fs::path> remove;
  std::set<std::string> present;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    // A temporary of a process killed before renaming it (its metrics file, or the totals).
    if (name.starts_with(kTemporaryPrefix) || name.starts_with(std::string(kTotalsName) + ".tmp")) {
      std::error_code age_ec;  // the file may be renamed meanwhile: no error of the listing's
      const auto age = fs::file_time_type::clock::now() - entry.last_write_time(age_ec);
      if (!age_ec && age > kStaleTemporary && lock.held()) remove.push_back(entry.path());
      continue;
    }
    if (!name.starts_with(kProcessPrefix)) continue;
    present.insert(name);
    // This process's own files are live whatever a lock test says (flock emulated per process,
    // as on some network file systems, would let us lock our own).
    if (own.contains(name)) {
      auto contents = ReadOwn(entry.path());
      if (contents.ok()) AddLive(node, std::move(*contents));
      continue;
    }
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno != ENOENT) {
        Log().debug("metrics: {}", ErrnoToStatus(errno, "opening", entry.path()).ToString());
      }
      continue;
    }
    const bool exited = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    if (exited && totals.folded.contains(name)) {
      // Folded by a process that stopped before it could remove the file.
      if (lock.held()) remove.push_back(entry.path());
      ::close(fd);
      continue;
    }
    auto contents = ReadMetricsFile(fd, entry.path());
    ::close(fd);
    if (!contents.ok()) {
      Log().warn("metrics: {}", contents.status().ToString());
      if (exited && lock.held()) remove.push_back(entry.path());
      continue;
    }
    if (exited) {
      if (lock.held()) {
        AddCounters(totals.counters, contents->counters);
        totals.folded.insert(name);
        remove.push_back(entry.path());
        dirty = true;
      } else {
        AddCounters(node.exited, contents->counters);
      }
      continue;
    }
    AddLive(node, std::move(*contents));
  }
  if (ec) return ErrnoToStatus(ec.value(), "listing", folder);
  // A name is remembered until a listing no longer shows its file: one removed below may yet
  // survive a crash, and must then not be counted twice.
  dirty |= std::erase_if(totals.folded,
                         [&](const std::string& name) { return !present.contains(name); }) > 0;
  if (dirty && lock.held()) FERRY_RETURN_IF_ERROR(SaveTotals(folder, totals, file_mode));
  for (const fs::path& path : remove) ::unlink(path.c_str());
  AddCounters(node.exited, totals.counters);
  AddCounters(node.values, node.exited);
  return node;
}

}  // namespace ferry::metrics
