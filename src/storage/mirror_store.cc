#include "storage/mirror_store.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <optional>
#include <set>
#include <utility>

#include "base/log.h"
#include "base/mutex.h"
#include "base/run_each.h"
#include "ferry/metrics/metrics.h"
#include "storage/http/http_types.h"
#include "storage/retry_policy.h"
#include "storage/source_speeds.h"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

// Attempts a mirror's store makes at a read before another mirror takes it over (the store's
// own policy allows 8, backing off for seconds: right when nothing else holds the data).
constexpr int kAttemptsBeforeFailover = 2;

// How long a mirror with another behind it may send nothing (under 1 KiB/s) before its read is
// given up, demoting it; a stall (kDeadlineExceeded) is not retried on the same mirror.
constexpr std::chrono::seconds kStallBeforeFailover{5};

// How often a budget reads the node's count of its source (the files of every process reading
// the cache folder); between, this process's own count moves it on.
constexpr std::chrono::milliseconds kBudgetRecheck{200};

struct MirrorCounters {
  metrics::Counter& bytes_read;
  metrics::Counter& failovers;
  metrics::Counter& missing;
  metrics::Counter& wrong_size;
};

MirrorCounters CountersOf(size_t i) {
  return {.bytes_read = metrics::GetCounter(fmt::format("/ferry/mirror/{}/bytes_read", i)),
          .failovers = metrics::GetCounter(fmt::format("/ferry/mirror/{}/failovers", i)),
          .missing = metrics::GetCounter(fmt::format("/ferry/mirror/{}/missing", i)),
          .wrong_size = metrics::GetCounter(fmt::format("/ferry/mirror/{}/wrong_size", i))};
}

// What the read of one mirror ended with, besides its result.
struct CallFlags {
  bool stop = false;         // the caller's sink refused: no mirror is to blame
  bool over_budget = false;  // the mirror's source spent its egress budget: pass it on
  bool wrong_size = false;   // the mirror's copy has another size than the index gives
  bool tainted = false;      // ... and bytes of it reached the caller's sink
};

// One source's egress: its counters and budget, spent as the node counts it from the open on.
struct SourceAccount {
  std::string label;
  double usd_per_gb = 0;
  std::optional<uint64_t> budget;
  std::optional<uint64_t> epoch_budget;
  metrics::Counter* bytes_read = nullptr;
  metrics::Counter* over_budget = nullptr;
  // The node's count at the open, and the last one read (with this process's own then).
  int64_t node_at_open = 0;
  int64_t node_seen = 0;
  int64_t local_seen = 0;
  std::chrono::steady_clock::time_point seen_at{};
  // The epoch last read, and what the source had spent since the open when it began.
  uint64_t epoch = 0;
  uint64_t spent_before_epoch = 0;
  // Bytes of chunks this process is delivering now, not counted in bytes_read yet.
  uint64_t reserved = 0;
};

// What one source has delivered: since the open, and in the epoch being read.
struct Spending {
  uint64_t since_open = 0;
  uint64_t in_epoch = 0;
};

class MirrorStore final : public ObjectStore {
 public:
  MirrorStore(std::vector<Mirror> mirrors, MirrorOptions options)
      : mirrors_(std::move(mirrors)),
        health_(mirrors_.size(), options.demotion),
        speeds_(mirrors_.size()),
        node_total_(std::move(options.node_total)),
        epoch_(std::move(options.epoch)),
        size_of_(std::move(options.size_of)) {
    for (size_t i = 0; i < mirrors_.size(); ++i) counters_.push_back(CountersOf(i));
    MutexLock lock(budget_mu_);
    for (const Mirror& mirror : mirrors_) {
      const std::string label =
          SourceLabel(mirror.egress, http::RedactUrl(mirror.store->ToUrl(mirror.prefix)));
      auto same = std::find_if(sources_.begin(), sources_.end(),
                               [&](const SourceAccount& a) { return a.label == label; });
      if (same == sources_.end()) {
        SourceAccount& account = sources_.emplace_back();
        account.label = label;
        account.bytes_read = &metrics::GetCounter(SourceCounterName(label, "bytes_read"));
        account.over_budget = &metrics::GetCounter(SourceCounterName(label, "over_budget"));
        account.local_seen = account.bytes_read->value();
        account.node_at_open = NodeCount(account);
        account.node_seen = account.node_at_open;
        account.seen_at = Clock::now();
        account.epoch = epoch_ ? epoch_() : 0;
        same = std::prev(sources_.end());
      }
      // Mirrors of one source share its budget: the least any of them sets.
      same->budget = Least(same->budget, mirror.egress.budget);
      same->epoch_budget = Least(same->epoch_budget, mirror.egress.epoch_budget);
      same->usd_per_gb = std::max(same->usd_per_gb, mirror.egress.usd_per_gb);
      source_of_.push_back(static_cast<size_t>(same - sources_.begin()));
    }
  }

  std::string_view scheme() const override { return mirrors_.front().store->scheme(); }
  bool read_only() const override { return true; }
  std::string ToUrl(std::string_view key) const override { return UrlOf(0, key); }

  Result<ObjectInfo> Head(std::string_view key) override {
    auto info =
        OnEachMirror(key, [&](size_t i, CallFlags& flags) { return CheckedHead(i, key, flags); });
    if (!info) return info;
    info->key = std::string(key);
    Unversioned(*info);
    return info;
  }

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    uint64_t delivered = 0;
    std::optional<size_t> served_by;  // the one mirror that sent every byte, if one did
    const std::optional<uint64_t> expected = ExpectedSize(key);
    auto info = OnEachMirror(
        key,
        [&](size_t i, CallFlags& flags) -> Result<ObjectInfo> {
          // Failed after its last byte: what is left to ask is the object's size, not a range.
          if (delivered > 0 && range.length && delivered == *range.length) {
            return CheckedHead(i, key, flags);
          }
          if (OverBudget(i)) {
            flags.over_budget = true;
            return BudgetSpent(i);
          }
          const ByteRange rest = {
              .offset = range.offset + delivered,
              .length = range.length ? std::optional(*range.length - delivered) : std::nullopt};
          const uint64_t before = delivered;
          const Clock::time_point started = Clock::now();
          SourceAccount& source = sources_[source_of_[i]];
          auto got = Store(i).Read(Key(i, key), rest, [&](std::string_view chunk) {
            if (expected && range.offset + delivered + chunk.size() > *expected) {
              flags.wrong_size = true;
              flags.tainted = delivered > before;
              return CheckSize(i, key, range.offset + delivered + chunk.size(), expected,
                               "at least ");
            }
            // A chunk is delivered only while the budget is not spent, counting the chunks the
            // other reads are delivering: concurrent reads cannot all cross it at once.
            const bool budgeted = source.budget || source.epoch_budget;
            if (budgeted && !Reserve(i, chunk.size())) {
              flags.over_budget = true;
              return BudgetSpent(i);
            }
            Status status = sink(chunk);
            if (status.ok()) {
              delivered += chunk.size();
              counters_[i].bytes_read.Add(chunk.size());
              source.bytes_read->Add(chunk.size());
            }
            if (budgeted) Unreserve(i, chunk.size());  // counted above first: never in neither
            if (!status.ok()) {
              flags.stop = true;  // the caller's word, not the mirror's fault
              return status;
            }
            if (budgeted && OverBudget(i)) {
              flags.over_budget = true;
              return BudgetSpent(i);
            }
            return status;
          });
          if (got) {  // a ranged read reports the whole object's size too
            if (Status s = CheckSize(i, key, got->size, expected); !s.ok()) {
              flags.wrong_size = true;
              flags.tainted = delivered > before;
              return s;
            }
          }
          if (got && before == 0) {
            served_by = i;
            speeds_.Record(i, delivered, Clock::now() - started);
          }
          return got;
        },
        /*read=*/true);
    if (!info) return info;
    info->key = std::string(key);
    Unversioned(*info);
    info->source = served_by ? std::to_string(*served_by) : std::string(kSeveralSources);
    if (!served_by) info->checksum = {};
    return info;
  }

  Status Write(std::string_view key, const ByteSource&) override { return ReadOnly(key); }
  Status Remove(std::string_view key) override { return ReadOnly(key); }

  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    ListResult listing;
    auto listed = OnEachMirror(prefix, [&](size_t i, CallFlags&) -> Result<ObjectInfo> {
      auto got = Store(i).List(Key(i, prefix), recursive);
      if (!got) return got.status();
      listing = Relative(i, std::move(*got));
      return ObjectInfo{};
    });
    if (!listed) return listed.status();
    return listing;
  }

 private:
  // Each mirror has its own etags and times: a version from one would look like a change when
  // another answers next (ObjectVersion).
  static void Unversioned(ObjectInfo& info) {
    info.etag.clear();
    info.mtime.reset();
  }

  ObjectStore& Store(size_t i) const { return *mirrors_[i].store; }
  std::string Key(size_t i, std::string_view key) const {
    return mirrors_[i].prefix + std::string(key);
  }
  std::string UrlOf(size_t i, std::string_view key) const {
    return http::RedactUrl(Store(i).ToUrl(Key(i, key)));
  }

  ListResult Relative(size_t i, ListResult listed) const {
    const std::string& prefix = mirrors_[i].prefix;
    for (ObjectInfo& object : listed.objects) {
      if (object.key.starts_with(prefix)) object.key.erase(0, prefix.size());
    }
    for (std::string& folder : listed.prefixes) {
      if (folder.starts_with(prefix)) folder.erase(0, prefix.size());
    }
    return listed;
  }

  Status ReadOnly(std::string_view key) const {
    return FailedPreconditionError(
        fmt::format("{}: a dataset read from mirrors is read-only", UrlOf(0, key)));
  }

  // Mirrors in the order to try them: those not demoted by preference, then the demoted ones,
  // the soonest back first (the last resort, before giving up).
  std::vector<size_t> Order(bool for_read) {
    std::vector<size_t> healthy;
    std::vector<size_t> down;
    const Clock::time_point now = Clock::now();
    const std::vector<Clock::time_point> until = health_.DemotedUntil();
    for (size_t i = 0; i < mirrors_.size(); ++i) {
      if (!mirrors_[i].left_out) (until[i] > now ? down : healthy).push_back(i);
    }
    // The healthy by preference and speed - or, for a read whose turn it is, one to measure
    // first; then the demoted ones, the soonest back first (the last resort, before giving up).
    speeds_.Reorder(healthy);
    if (for_read && !healthy.empty()) {
      const double price = sources_[source_of_[healthy.front()]].usd_per_gb;
      const auto probe = speeds_.Probe(healthy, [&](size_t i) {
        const SourceAccount& source = sources_[source_of_[i]];
        return !source.budget && !source.epoch_budget && source.usd_per_gb <= price;
      });
      if (probe) {
        std::erase(healthy, *probe);
        healthy.insert(healthy.begin(), *probe);
      }
    }
    std::stable_sort(down.begin(), down.end(),
                     [&](size_t a, size_t b) { return until[a] < until[b]; });
    healthy.insert(healthy.end(), down.begin(), down.end());
    return healthy;
  }

  // Runs `call(i, flags)` on mirror after mirror until one succeeds. kNotFound, or a source
  // over its budget, passes the object to the next mirror; another error demotes the mirror
  // first; an error with `flags.stop` set, or kCancelled, ends it there.
  template <typename Call>
  Result<ObjectInfo> OnEachMirror(std::string_view key, const Call& call, bool read = false) {
    const std::vector<size_t> order = Order(read);
    std::optional<Status> failure;  // the last error other than kNotFound
    std::vector<size_t> lacking;
    std::vector<size_t> spent;  // sources over their budget
    std::vector<size_t> wrong;  // mirrors whose copy has another size than the index gives
    for (size_t n = 0; n < order.size(); ++n) {
      const size_t i = order[n];
      if (IsWrongCopy(i, key)) {
        wrong.push_back(i);
        continue;
      }
      CallFlags flags;
      const Clock::time_point started = Clock::now();
      Result<ObjectInfo> got = [&] {
        if (n + 1 == order.size()) return call(i, flags);  // the last resort retries in full
        // Another mirror can take over: a mirror that failed twice in a row, or that another
        // read found down meanwhile, is not waited for through its store's whole backoff.
        RetryGiveUpScope give_up([&](int attempts, const Status& attempt_failure) {
          return attempts >= kAttemptsBeforeFailover ||
                 attempt_failure.code() == StatusCode::kDeadlineExceeded ||
                 health_.DemotedSince(i, started);
        });
        // A transfer that stalls is given up after kStallBeforeFailover, not the transport's
        // usual 30 s: the next mirror goes on from the byte it reached.
        http::StallLimitScope stall(static_cast<uint32_t>(kStallBeforeFailover.count()));
        return call(i, flags);
      }();
      if (got) {
        health_.Succeeded(i, started);
        for (size_t m : lacking) counters_[m].missing.Add();
        return got;
      }
      const Status& status = got.status();
      if (flags.stop || status.code() == StatusCode::kCancelled) return status;
      if (flags.over_budget) {
        sources_[source_of_[i]].over_budget->Add();
        spent.push_back(i);
        continue;
      }
      if (flags.wrong_size) {
        if (MarkWrongCopy(i, key)) {  // once, however many reads find it at the same time
          counters_[i].wrong_size.Add();
          Log().warn("storage: {}; that mirror is passed over for it from now on",
                     status.message());
        }
        // Bytes of it reached the caller: only the caller can start over (its retry comes back
        // here, and goes to the next mirror).
        if (flags.tainted) return status;
        wrong.push_back(i);
        continue;
      }
      if (status.code() == StatusCode::kNotFound) {
        lacking.push_back(i);
        continue;
      }
      const auto demoted = health_.Demote(i);
      if (n + 1 < order.size()) {
        counters_[i].failovers.Add();
        Log().warn("storage: {} failed: {}; going on from {} ({} is passed over for {:.1f} s)",
                   UrlOf(i, key), status.message(), UrlOf(order[n + 1], key), UrlOf(i, ""),
                   demoted.count() / 1000.0);
      }
      failure = status;
    }
    if (failure) {
      return failure->WithContext(
          fmt::format("every mirror of {} failed; the last", UrlOf(0, key)));
    }
    if (!wrong.empty() && lacking.size() + wrong.size() == order.size()) {
      std::string urls;
      for (size_t i : wrong) urls += (urls.empty() ? "" : ", ") + UrlOf(i, key);
      return DataLossError(fmt::format(
          "{}: no mirror has a copy of the size the index gives ({} bytes): {} differ{}",
          UrlOf(0, key), ExpectedSize(key).value_or(0), urls,
          lacking.empty() ? "" : ", the rest lack it"));
    }
    if (!spent.empty()) {
      std::string budgets;
      for (size_t i : spent) budgets += (budgets.empty() ? "" : "; ") + BudgetSpent(i).message();
      return ResourceExhaustedError(fmt::format(
          "{}: not read: every source that has it is over its egress budget ({}); raise a "
          "budget, or add a mirror",
          UrlOf(0, key), budgets));
    }
    std::string urls;
    for (size_t i : order) urls += (urls.empty() ? "" : ", ") + UrlOf(i, key);
    return NotFoundError(fmt::format("no mirror has it: {}", urls));
  }

  Result<ObjectInfo> CheckedHead(size_t i, std::string_view key, CallFlags& flags) const {
    auto got = Store(i).Head(Key(i, key));
    if (!got) return got;
    if (Status s = CheckSize(i, key, got->size, ExpectedSize(key)); !s.ok()) {
      flags.wrong_size = true;
      return s;
    }
    return got;
  }

  // The size the index gives `key`, if it names it.
  std::optional<uint64_t> ExpectedSize(std::string_view key) const {
    return size_of_ ? size_of_(key) : std::nullopt;
  }

  // OK when `size` is `expected` (the size the index gives `key`), or there is none.
  Status CheckSize(size_t i, std::string_view key, uint64_t size, std::optional<uint64_t> expected,
                   std::string_view at_least = "") const {
    if (!expected || *expected == size) return Status::Ok();
    return DataLossError(fmt::format("{}: this mirror's copy has {}{} bytes, the index says {}",
                                     UrlOf(i, key), at_least, size, *expected));
  }

  // Every read asks, for each mirror it tries: without a wrong copy known, no lock or key copy.
  bool IsWrongCopy(size_t i, std::string_view key) {
    if (!any_wrong_copy_.load(std::memory_order_acquire)) return false;
    MutexLock lock(copies_mu_);
    return wrong_copies_.contains({i, std::string(key)});
  }

  // False when another read had found it already.
  bool MarkWrongCopy(size_t i, std::string_view key) {
    MutexLock lock(copies_mu_);
    any_wrong_copy_.store(true, std::memory_order_release);
    return wrong_copies_.insert({i, std::string(key)}).second;
  }

  int64_t NodeCount(const SourceAccount& source) const {
    return node_total_ ? node_total_(SourceCounterName(source.label, "bytes_read"))
                       : source.bytes_read->value();
  }

  static std::optional<uint64_t> Least(std::optional<uint64_t> a, std::optional<uint64_t> b) {
    if (!a) return b;
    if (!b) return a;
    return std::min(*a, *b);
  }

  // Bytes source `s` delivered by the node, since the open and in this epoch: its count as last
  // read (at most kBudgetRecheck ago, and at the epoch's start), and what this process
  // delivered since. One caller at a time reads the node's count, outside budget_mu_: it reads
  // every process's metrics file, and each chunk of every read checks the budget.
  Spending Spent(size_t s) {
    const uint64_t epoch = Refresh(s);
    MutexLock lock(budget_mu_);
    return SpentLocked(s, epoch);
  }

  // Reads the node's count of source `s` when its last is due, outside budget_mu_; returns the
  // epoch being read.
  uint64_t Refresh(size_t s) {
    SourceAccount& source = sources_[s];
    const Clock::time_point now = Clock::now();
    const uint64_t epoch = epoch_ ? epoch_() : 0;
    bool refresh = false;
    {
      MutexLock lock(budget_mu_);
      // A new epoch starts from a fresh count: the last may be kBudgetRecheck old.
      if (node_total_ && (now - source.seen_at > kBudgetRecheck || epoch != source.epoch)) {
        source.seen_at = now;  // claimed: others go on with the last count meanwhile
        refresh = true;
      }
    }
    if (refresh) {
      // This process's count first: the node's, read after, holds at least as much of it.
      const int64_t local = source.bytes_read->value();
      const int64_t node = NodeCount(source);
      MutexLock lock(budget_mu_);
      if (local >= source.local_seen) {  // not a slow refresh landing after a later one
        source.local_seen = local;
        source.node_seen = node;
      }
    }
    return epoch;
  }

  Spending SpentLocked(size_t s, uint64_t epoch) REQUIRES(budget_mu_) {
    SourceAccount& source = sources_[s];
    const int64_t spent =
        source.node_seen - source.node_at_open + (source.bytes_read->value() - source.local_seen);
    const uint64_t since_open = static_cast<uint64_t>(std::max<int64_t>(0, spent));
    if (epoch != source.epoch) {
      source.epoch = epoch;
      source.spent_before_epoch = since_open;
    }
    return {.since_open = since_open,
            .in_epoch = since_open - std::min(since_open, source.spent_before_epoch)};
  }

  // Claims `bytes` of source i's budget for a chunk about to be delivered: false when what it
  // has spent, with the chunks being delivered, reaches a budget. So the source ends at most
  // one chunk past it, however many reads deliver at once.
  bool Reserve(size_t i, uint64_t bytes) {
    const size_t s = source_of_[i];
    SourceAccount& source = sources_[s];
    const uint64_t epoch = Refresh(s);
    MutexLock lock(budget_mu_);
    const Spending spent = SpentLocked(s, epoch);
    if ((source.budget && spent.since_open + source.reserved >= *source.budget) ||
        (source.epoch_budget && spent.in_epoch + source.reserved >= *source.epoch_budget)) {
      return false;
    }
    source.reserved += bytes;
    return true;
  }

  void Unreserve(size_t i, uint64_t bytes) {
    MutexLock lock(budget_mu_);
    sources_[source_of_[i]].reserved -= bytes;
  }

  bool OverBudget(size_t i) {
    const SourceAccount& source = sources_[source_of_[i]];
    if (!source.budget && !source.epoch_budget) return false;
    const Spending spent = Spent(source_of_[i]);
    return (source.budget && spent.since_open >= *source.budget) ||
           (source.epoch_budget && spent.in_epoch >= *source.epoch_budget);
  }

  Status BudgetSpent(size_t i) {
    const size_t s = source_of_[i];
    const SourceAccount& source = sources_[s];
    const Spending spent = Spent(s);
    if (source.budget && spent.since_open >= *source.budget) {
      return ResourceExhaustedError(
          fmt::format("{} has delivered {} bytes of its egress budget of {}", source.label,
                      spent.since_open, *source.budget));
    }
    return ResourceExhaustedError(
        fmt::format("{} has delivered {} bytes this epoch, of its egress budget of {} per epoch",
                    source.label, spent.in_epoch, source.epoch_budget.value_or(0)));
  }

  const std::vector<Mirror> mirrors_;
  std::vector<MirrorCounters> counters_;
  SourceHealth health_;
  SourceSpeeds speeds_;
  const std::function<int64_t(const std::string&)> node_total_;
  const std::function<uint64_t()> epoch_;
  const std::function<std::optional<uint64_t>(std::string_view)> size_of_;
  std::vector<size_t> source_of_;  // per mirror: its source in sources_
  Mutex copies_mu_;
  // (mirror, key) of every copy found with another size than size_of_ gives.
  std::set<std::pair<size_t, std::string>> wrong_copies_ GUARDED_BY(copies_mu_);
  std::atomic<bool> any_wrong_copy_{false};
  Mutex budget_mu_;
  // Fixed after construction but for the counts Spent reads and keeps (under budget_mu_).
  std::vector<SourceAccount> sources_;
};

}  // namespace

std::string SourceLabel(const SourceEgress& egress, std::string_view url) {
  if (!egress.label.empty()) return egress.label;
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t bucket_end = url.find('/', scheme + 3);
  if (bucket_end == scheme + 3) {  // no host or bucket (file:///path): the folder itself
    return std::string(url.ends_with('/') ? url.substr(0, url.size() - 1) : url);
  }
  return std::string(url.substr(0, bucket_end));
}

std::string SourceCounterName(std::string_view label, std::string_view what) {
  std::string name = "/ferry/source/";
  for (const char c : label) {
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  }
  return name + "/" + std::string(what);
}

Result<std::shared_ptr<ObjectStore>> MakeMirrorStore(std::vector<Mirror> mirrors,
                                                     MirrorOptions options) {
  if (mirrors.empty()) return InvalidArgumentError("mirrors: none given");
  for (const Mirror& mirror : mirrors) {
    if (!mirror.store) return InvalidArgumentError("mirrors: a mirror without a store");
    if (!mirror.prefix.empty() && !mirror.prefix.ends_with('/')) {
      return InvalidArgumentError(
          fmt::format("mirrors: the folder {} does not end in '/'", mirror.prefix));
    }
  }
  if (std::all_of(mirrors.begin(), mirrors.end(), [](const Mirror& m) { return m.left_out; })) {
    return InvalidArgumentError("mirrors: every one is left out");
  }
  return std::shared_ptr<ObjectStore>(std::make_shared<MirrorStore>(std::move(mirrors), options));
}

namespace {

// What a mirror's copy of the index showed: its version, and when read, its size and digest.
struct Copy {
  std::string url;
  std::optional<Status> error;  // it could not show its copy
  std::string version;
  uint64_t size = 0;
  XXH128_hash_t digest{};
};

// Reads the copy whole, keeping only its digest: an index of 100,000 shards is 34 MB a copy.
void ReadCopy(const Mirror& mirror, const std::string& object, Copy& copy) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  uint64_t size = 0;
  auto read = mirror.store->Read(object, {}, [&](std::string_view chunk) {
    XXH3_128bits_update(state, chunk.data(), chunk.size());
    size += chunk.size();
    return Status::Ok();
  });
  if (read) {
    copy.version = ObjectVersion(*read);
    copy.size = size;
    copy.digest = XXH3_128bits_digest(state);
  } else {
    copy.error = read.status();
  }
  XXH3_freeState(state);
}

// One version for the copies that answered, from each one's URL and version: another mirror
// left out, or back, is another version too. Empty when one of them has no version.
std::string VersionOfCopies(const std::vector<Copy>& copies) {
  std::string named;
  for (const Copy& copy : copies) {
    if (copy.error) continue;
    if (copy.version.empty()) return {};
    // Each with its NUL, so that no two lists run together alike.
    named.append(copy.url).push_back('\0');
    named.append(copy.version).push_back('\0');
  }
  return fmt::format("mirrors:{:016x}", XXH3_64bits(named.data(), named.size()));
}

}  // namespace

Result<OneDataset> MirrorsOfOneDataset(std::vector<Mirror> mirrors, std::string_view key,
                                       const CopyVersions& known, bool read_copies) {
  if (mirrors.empty()) return InvalidArgumentError("mirrors: none given");
  const size_t n = mirrors.size();
  std::vector<std::string> objects(n);
  std::vector<Copy> copies(n);
  for (size_t i = 0; i < n; ++i) {
    objects[i] = mirrors[i].prefix + std::string(key);
    copies[i].url = http::RedactUrl(mirrors[i].store->ToUrl(objects[i]));
  }
  // The mirrors are asked at once: each is a round trip to another place.
  bool confirmed = false;
  if (!known.empty()) {
    RunEach(n, n, [&](size_t i) {
      auto head = mirrors[i].store->Head(objects[i]);
      if (head) {
        copies[i].version = ObjectVersion(*head);
      } else {
        copies[i].error = head.status();
      }
    });
    confirmed = std::any_of(copies.begin(), copies.end(), [](const Copy& c) { return !c.error; }) &&
                std::all_of(copies.begin(), copies.end(), [&](const Copy& c) {
                  if (c.error) return true;
                  const auto it = known.find(c.url);
                  return !c.version.empty() && it != known.end() && it->second == c.version;
                });
  }
  if (!confirmed && !read_copies) return OneDataset{.mirrors = std::move(mirrors)};
  if (!confirmed) {
    RunEach(n, n, [&](size_t i) {
      if (!copies[i].error) ReadCopy(mirrors[i], objects[i], copies[i]);
    });
  }
  OneDataset out;
  out.confirmed = confirmed;
  const Copy* first = nullptr;  // the first that answered
  std::optional<Status> first_error;
  for (size_t i = 0; i < n; ++i) {
    const Copy& copy = copies[i];
    if (copy.error) {
      Log().warn(
          "storage: mirror {} is left out: it cannot show that it holds the same dataset: {}",
          copy.url, copy.error->message());
      if (!first_error) first_error = *copy.error;
      mirrors[i].left_out = true;
      continue;
    }
    if (confirmed) continue;
    if (first == nullptr) {
      first = &copy;
    } else if (copy.size != first->size || !XXH128_isEqual(copy.digest, first->digest)) {
      return FailedPreconditionError(
          fmt::format("{} ({} bytes) is not {} ({} bytes): mirrors must hold one dataset, byte "
                      "for byte",
                      copy.url, copy.size, first->url, first->size));
    }
    if (!copy.version.empty()) out.versions[copy.url] = copy.version;
  }
  if (first == nullptr && !confirmed) {
    return first_error->WithContext("no mirror can show its copy of the dataset");
  }
  out.version = VersionOfCopies(copies);
  out.mirrors = std::move(mirrors);
  return out;
}

}  // namespace ferry
