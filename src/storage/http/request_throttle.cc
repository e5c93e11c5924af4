#include "storage/http/request_throttle.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "base/ascii.h"
#include "base/fork_guard.h"
#include "base/log.h"
#include "ferry/metrics/metrics.h"
#include "storage/http/http_date.h"
#include "storage/retry_policy.h"

namespace ferry::http {

// One target's entry in the node-wide table: what a throttle tells the other processes.
struct NodeThrottleEntry {
  std::atomic<uint64_t> target;          // the target's hash; 0: a free entry
  std::atomic<int64_t> paused_until_ns;  // steady (CLOCK_MONOTONIC) time, node-wide
  std::atomic<uint64_t> throttles;       // throttles any process saw
  std::atomic<uint64_t> unused;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

struct NodeThrottleTable {
  static constexpr int kEntries = 128;
  NodeThrottleEntry* entries = nullptr;

  ~NodeThrottleTable() {
    if (entries != nullptr) ::munmap(entries, sizeof(NodeThrottleEntry) * kEntries);
  }

  static std::shared_ptr<NodeThrottleTable> Open(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return nullptr;
    constexpr size_t kBytes = sizeof(NodeThrottleEntry) * kEntries;
    struct stat st {};
    // Another user's file (planted to stall us) is not ours to trust.
    const bool ours = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid();
    if (!ours || (static_cast<size_t>(st.st_size) < kBytes &&
                  ::ftruncate(fd, static_cast<off_t>(kBytes)) != 0)) {
      ::close(fd);
      return nullptr;
    }
    void* map = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return nullptr;
    auto table = std::make_shared<NodeThrottleTable>();
    table->entries = static_cast<NodeThrottleEntry*>(map);
    return table;
  }

  static uint64_t Hash(std::string_view target) {
    return std::max<uint64_t>(1, XXH3_64bits(target.data(), target.size()));  // 0: free
  }

  // The entry of the target hashed `hash`: with `claim`, claimed if it has none (-1 when the
  // table is full); without, -1 when it has none. Entries are never freed, and only a target
  // that throttled claims one, so a probe stops at the first free entry.
  int Slot(uint64_t hash, bool claim) {
    for (int probe = 0; probe < kEntries; ++probe) {
      const int slot = static_cast<int>((hash + static_cast<uint64_t>(probe)) % kEntries);
      uint64_t seen = entries[slot].target.load();
      if (seen == 0) {
        if (!claim) return -1;
        if (entries[slot].target.compare_exchange_strong(seen, hash)) return slot;
      }
      if (seen == hash) return slot;  // (maybe claimed by another process just now)
    }
    return -1;
  }
};

std::shared_ptr<NodeThrottleTable> OpenNodeThrottleTable(const std::filesystem::path& file) {
  return NodeThrottleTable::Open(file);
}

int NodeThrottleSlot(NodeThrottleTable& table, std::string_view target) {
  return table.Slot(NodeThrottleTable::Hash(target), /*claim=*/true);
}

namespace {

// The user's table on this node, by ThrottleFor's rules (OpenNodeThrottleTable).
std::shared_ptr<NodeThrottleTable> OpenDefaultNodeTable() {
  const char* off = std::getenv("FERRY_NODE_THROTTLE");
  if (off != nullptr && std::string_view(off) == "off") return nullptr;
  std::error_code ec;
  const char* tmpdir = std::getenv("TMPDIR");
  const std::filesystem::path folder = std::filesystem::is_directory("/dev/shm", ec)
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::path(tmpdir ? tmpdir : "/tmp");
  return NodeThrottleTable::Open(folder / fmt::format("ferry-throttle-{}", ::geteuid()));
}

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using Clock = RequestThrottle::Clock;

metrics::Counter& ThrottledCounter() {
  static metrics::Counter& counter = metrics::GetCounter("/ferry/storage/throttled");
  return counter;
}
metrics::Counter& WaitCounter() {
  static metrics::Counter& counter = metrics::GetCounter("/ferry/storage/throttle_wait_ns");
  return counter;
}

int64_t SteadyNs(Clock::time_point t) {
  return std::chrono::duration_cast<nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

bool IsThrottleResponse(int status, const Headers& headers) {
  if (status == 429 || status == 503) return true;
  if (status == 500) {
    const auto code = headers.Get("x-ms-error-code");
    return code && (*code == "OperationTimedOut" || *code == "ServerBusy");
  }
  return false;
}

std::optional<milliseconds> RetryAfter(const Headers& headers,
                                       std::chrono::system_clock::time_point now) {
  std::optional<milliseconds> wait;
  if (auto ms = headers.Get("x-ms-retry-after-ms")) {
    if (auto n = ParseUint(TrimAsciiWhitespace(*ms))) {
      wait = milliseconds(std::min<uint64_t>(*n, static_cast<uint64_t>(kMaxRetryAfter.count())));
    }
  }
  if (!wait) {
    if (auto value = headers.Get("Retry-After")) {
      const std::string_view text = TrimAsciiWhitespace(*value);
      if (auto seconds = ParseUint(text)) {
        wait = milliseconds(std::min<uint64_t>(*seconds, kMaxRetryAfter.count() / 1000) * 1000);
      } else if (auto date = ParseHttpDate(text)) {
        wait = std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(*date - now));
      }
    }
  }
  if (wait) wait = std::min(*wait, kMaxRetryAfter);
  return wait;
}

std::string ThrottleTarget(std::string_view url) {
  const size_t scheme = url.find("://");
  std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("?#"));
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::string(rest);
  const std::string_view host = rest.substr(0, slash);
  const std::string_view path = rest.substr(slash + 1);
  const size_t next = path.find('/');
  // A key at the root of a virtual-hosted bucket: its first segment is the object itself.
  if (next == std::string_view::npos) return std::string(host);
  return fmt::format("{}/{}", host, path.substr(0, next));
}

RequestThrottle::Permit::~Permit() {
  if (throttle_ != nullptr) throttle_->Leave();
}

RequestThrottle::RequestThrottle(std::string target, ThrottleTuning tuning,
                                 std::shared_ptr<NodeThrottleTable> node)
    : target_(std::move(target)),
      tuning_(tuning),
      node_(std::move(node)),
      target_hash_(NodeThrottleTable::Hash(target_)) {}

void RequestThrottle::Decrease(Clock::time_point now) {
  if (now - last_decrease_ < tuning_.decrease_interval) return;  // the same burst
  last_decrease_ = now;
  const double from = limit_ > 0 ? limit_ : std::max(1, in_flight_);
  limit_ = std::max(1.0, from / 2);
  in_flight_at_cut_ = std::max(in_flight_at_cut_, in_flight_);
  Log().info("storage: {} throttles: at most {:.0f} requests at once to it", target_, limit_);
}

void RequestThrottle::FollowNode(Clock::time_point now) {
  if (!node_) return;
  // Until a process on the node is throttled by the target, it has no entry to follow.
  if (node_slot_ < 0) {
    node_slot_ = node_->Slot(target_hash_, /*claim=*/false);
    if (node_slot_ < 0) return;
    // Throttles from before this gate existed are history; a pause still running is not.
    node_throttles_seen_ = node_->entries[node_slot_].throttles.load();
  }
  NodeThrottleEntry& entry = node_->entries[node_slot_];
  const uint64_t throttles = entry.throttles.load();
  if (throttles != node_throttles_seen_) {
    node_throttles_seen_ = throttles;
    Decrease(now);
  }
  const int64_t paused_ns = entry.paused_until_ns.load();
  const int64_t now_ns = SteadyNs(now);
  // A pause past the longest anyone may ask for is a stale or planted one.
  if (paused_ns > now_ns && paused_ns - now_ns <= nanoseconds(kMaxRetryAfter).count()) {
    paused_until_ = std::max(paused_until_, Clock::time_point(nanoseconds(paused_ns)));
  }
}

Result<RequestThrottle::Permit> RequestThrottle::Enter(
    const std::function<Status()>& still_wanted) {
  MutexLock lock(mu_);
  FollowNode(Clock::now());
  const auto may_start = [&]() REQUIRES(mu_) {
    return Clock::now() >= paused_until_ && (limit_ == 0 || in_flight_ < static_cast<int>(limit_));
  };
  if (!may_start()) {
    const auto start = Clock::now();
    Status wanted;
    while (!may_start()) {
      // Slices of at most 100 ms: the node's table may pause us, the caller may give up.
      const auto until =
          std::min(Clock::now() < paused_until_ ? paused_until_ : Clock::time_point::max(),
                   Clock::now() + milliseconds(100));
      changed_.wait_until(lock, until, [&]() REQUIRES(mu_) { return may_start(); });
      FollowNode(Clock::now());
      if (still_wanted && !may_start()) {
        lock.unlock();
        wanted = still_wanted();
        lock.lock();
        if (!wanted.ok()) break;
      }
    }
    WaitCounter().Add(static_cast<uint64_t>(
        std::chrono::duration_cast<nanoseconds>(Clock::now() - start).count()));
    if (!wanted.ok()) return wanted;
  }
  ++in_flight_;
  return Permit(this);
}

void RequestThrottle::Leave() {
  {
    MutexLock lock(mu_);
    --in_flight_;
  }
  changed_.notify_one();
}

void RequestThrottle::Succeeded() {
  MutexLock lock(mu_);
  throttles_in_a_row_ = 0;
  if (limit_ == 0) return;
  const int before = static_cast<int>(limit_);
  limit_ += 1.0 / limit_;
  if (limit_ > 2.0 * std::max(1, in_flight_at_cut_)) {
    Log().debug("storage: {} no longer throttles", target_);
    limit_ = 0;
    in_flight_at_cut_ = 0;
    changed_.notify_all();
  } else if (static_cast<int>(limit_) > before) {
    changed_.notify_one();  // room for one more
  }
}

milliseconds RequestThrottle::Throttled(std::optional<milliseconds> retry_after) {
  ThrottledCounter().Add();
  MutexLock lock(mu_);
  const auto now = Clock::now();
  Decrease(now);
  // The backoff, doubling with each throttle in a row, is the least pause: a Retry-After of 0
  // (or a date gone by) must not make every request ask again at once.
  const int doublings = std::min(throttles_in_a_row_, 16);
  const auto backoff =
      std::min<int64_t>(tuning_.max_pause.count(), tuning_.first_pause.count() << doublings);
  milliseconds pause(static_cast<int64_t>(static_cast<double>(backoff) * (0.5 + UnitRandom() / 2)));
  if (retry_after) pause = std::max(pause, *retry_after);
  ++throttles_in_a_row_;
  paused_until_ = std::max(paused_until_, now + pause);
  if (node_ && node_slot_ < 0) node_slot_ = node_->Slot(target_hash_, /*claim=*/true);
  if (node_slot_ >= 0) {  // (a full table: this process throttles alone)
    NodeThrottleEntry& entry = node_->entries[node_slot_];
    node_throttles_seen_ = entry.throttles.fetch_add(1) + 1;
    const int64_t until = SteadyNs(paused_until_);
    int64_t seen = entry.paused_until_ns.load();
    while (seen < until && !entry.paused_until_ns.compare_exchange_weak(seen, until)) {
    }
  }
  return std::chrono::duration_cast<milliseconds>(paused_until_ - now);
}

std::optional<double> RequestThrottle::limit() const {
  MutexLock lock(mu_);
  if (limit_ == 0) return std::nullopt;
  return limit_;
}

namespace {

constexpr size_t kMaxGates = 256;

struct ThrottleRegistry {
  Mutex mu;
  // Never destroyed: a forked child drops the parent's gates (their requests are not its own,
  // and a mutex of theirs may have been held at the fork) without running their destructors.
  std::map<std::string, RequestThrottle*, std::less<>> gates GUARDED_BY(mu);
  std::shared_ptr<NodeThrottleTable> node GUARDED_BY(mu);
  bool node_opened GUARDED_BY(mu) = false;
};

// Set before the fork hook is registered: the hook must not touch Registry()'s static while
// it is being initialized.
std::atomic<ThrottleRegistry*> registry_for_fork{nullptr};

void DropParentGates() NO_THREAD_SAFETY_ANALYSIS {  // runs holding the registry's mutex
  registry_for_fork.load()->gates.clear();
}

ThrottleRegistry& Registry() {
  static ThrottleRegistry* const registry = [] {
    auto* r = new ThrottleRegistry;
    registry_for_fork.store(r);
    LockAcrossFork(r->mu, &DropParentGates);
    return r;
  }();
  return *registry;
}

}  // namespace

RequestThrottle& ThrottleFor(std::string_view url) {
  std::string target = ThrottleTarget(url);
  ThrottleRegistry& registry = Registry();
  MutexLock lock(registry.mu);
  if (auto it = registry.gates.find(target); it != registry.gates.end()) return *it->second;
  // Keys spread over very many first folders: past kMaxGates, one gate per host, so that the
  // gates and the node table's entries stay bounded.
  if (registry.gates.size() >= kMaxGates) {
    target = target.substr(0, target.find('/'));
    if (auto it = registry.gates.find(target); it != registry.gates.end()) return *it->second;
  }
  if (!registry.node_opened) {
    registry.node_opened = true;
    registry.node = OpenDefaultNodeTable();
  }
  auto* gate = new RequestThrottle(target, {}, registry.node);
  registry.gates.emplace(target, gate);
  return *gate;
}

Result<Response> ExecuteThroughGate(Transport& transport,
                                    const std::function<Result<Request>()>& build,
                                    const BodySink& sink, Clock::time_point deadline,
                                    const std::function<Status()>& still_wanted,
                                    RequestThrottle** gate_cache) {
  for (;;) {
    FERRY_ASSIGN_OR_RETURN(Request request, build());
    RequestThrottle* found = gate_cache != nullptr ? *gate_cache : nullptr;
    if (found == nullptr) found = &ThrottleFor(request.url);
    if (gate_cache != nullptr) *gate_cache = found;
    RequestThrottle& gate = *found;
    FERRY_ASSIGN_OR_RETURN(const RequestThrottle::Permit permit, gate.Enter(still_wanted));
    Result<Response> result = transport.Execute(std::move(request), sink);
    if (!result) return result;
    if (!IsThrottleResponse(result->status, result->headers)) {
      if (result->status < 500) gate.Succeeded();
      return result;
    }
    if (Clock::now() >= deadline) return result;
    const auto pause = gate.Throttled(RetryAfter(result->headers));
    if (still_wanted) FERRY_RETURN_IF_ERROR(still_wanted());
    Log().debug("storage: {} throttles (HTTP {}): waiting {} ms, then at most {} requests at once",
                gate.target(), result->status, pause.count(),
                gate.limit() ? fmt::format("{:.0f}", *gate.limit()) : std::string("unlimited"));
  }
}

}  // namespace ferry::http
