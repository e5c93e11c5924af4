// RequestThrottle: how many requests go to one storage target at once, and when, adapted to
// what the target says when it throttles (S3 503 SlowDown, GCS 429, Azure 503 ServerBusy and
// 500 OperationTimedOut, any Retry-After).
//
// A throttled target wants fewer requests, not the same number retried on each one's own
// schedule. So every GET to a target (ResumableGet: what reads shards) passes one gate per
// target, shared by the whole process:
//   - concurrency: unlimited until the first throttle; then AIMD - a throttle halves the limit
//     (at most once per kDecreaseInterval, so one burst of 503s counts once), each success adds
//     1/limit (one more request per limit's worth of successes), and a limit that grows past
//     twice the requests in flight when it was cut is lifted;
//   - time: a throttle pauses every new request to the target until its Retry-After (or
//     x-ms-retry-after-ms) has passed - or, without one, for a backoff that doubles with each
//     throttle in a row (kFirstPause to kMaxPause, jittered) and resets on a success.
// A target is the URL's host and its first path segment (S3's bucket in path style, or the
// first folder of a key in virtual-hosted style - S3 throttles per prefix -, Azure's
// container, GCS's bucket).
//
// Across processes: a throttle is also written to a small table shared by the user's processes
// on the node (/dev/shm, or TMPDIR): its pause, and that it happened. Every process's gate
// reads it, so the pause holds node-wide and each process halves its own limit once per
// throttle any of them saw. Nothing counted in it can leak when a process is killed: no
// process's in-flight requests are in the table.
//
// Throttled attempts do not spend the retry policy's attempts (ResumableGet retries them at the
// gate, for as long as the policy's total_budget lasts). Counters: /ferry/storage/throttled
// (throttle replies) and /ferry/storage/throttle_wait_ns (time requests waited at a gate).
//
// Thread-safety: everything may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "ferry/result.h"
#include "storage/http/http_types.h"
#include "storage/http/transport.h"

namespace ferry::http {

/// Whether a response is a throttle: 429, 503, or Azure's 500 OperationTimedOut.
bool IsThrottleResponse(int status, const Headers& headers);

/// How long a throttle response asks to be left alone: x-ms-retry-after-ms, or Retry-After in
/// seconds or as an HTTP date (against `now`); nullopt when it says nothing usable. At most
/// kMaxRetryAfter.
std::optional<std::chrono::milliseconds> RetryAfter(
    const Headers& headers,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

/// The target a request URL goes to: "host[:port]/first-segment".
std::string ThrottleTarget(std::string_view url);

struct ThrottleTuning {
  std::chrono::milliseconds decrease_interval{200};
  std::chrono::milliseconds first_pause{100};
  std::chrono::milliseconds max_pause{5'000};
};

inline constexpr std::chrono::milliseconds kMaxRetryAfter{60'000};

struct NodeThrottleTable;  // the node-wide table (request_throttle.cc)

/// The node-wide table in `file` (created 0600 if missing); nullptr when it cannot be had, or
/// the file is not a regular file of this user's. ThrottleFor's is /dev/shm/ferry-throttle-<uid>
/// (TMPDIR where there is no /dev/shm); FERRY_NODE_THROTTLE=off keeps each process to itself.
std::shared_ptr<NodeThrottleTable> OpenNodeThrottleTable(const std::filesystem::path& file);
/// `target`'s entry in `table`, claimed if need be (as a throttle claims it); -1 when the table
/// is full.
int NodeThrottleSlot(NodeThrottleTable& table, std::string_view target);

class RequestThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  /// A request admitted through the gate; leaving the scope lets the next one in.
  class Permit {
   public:
    Permit() = default;
    Permit(Permit&& other) noexcept : throttle_(other.throttle_) { other.throttle_ = nullptr; }
    Permit& operator=(Permit&&) = delete;
    Permit(const Permit&) = delete;
    ~Permit();

   private:
    friend class RequestThrottle;
    explicit Permit(RequestThrottle* throttle) : throttle_(throttle) {}
    RequestThrottle* throttle_ = nullptr;
  };

  /// `node`: the node-wide table shared with the user's other processes (null: this process
  /// alone). The target gets an entry in it when first throttled.
  RequestThrottle(std::string target, ThrottleTuning tuning = {},
                  std::shared_ptr<NodeThrottleTable> node = nullptr);

  /// Waits until a request may start (the pause has passed and fewer than the limit are in
  /// flight). `still_wanted`, when given, is asked about every 100 ms while waiting; its error
  /// ends the wait and is returned.
  Result<Permit> Enter(const std::function<Status()>& still_wanted = {}) EXCLUDES(mu_);
  /// The request was answered, not throttled.
  void Succeeded() EXCLUDES(mu_);
  /// The request was throttled; `retry_after` is what the response asked for. Returns the pause
  /// the gate now holds new requests for.
  std::chrono::milliseconds Throttled(std::optional<std::chrono::milliseconds> retry_after)
      EXCLUDES(mu_);

  const std::string& target() const { return target_; }
  /// The concurrency limit now; nullopt while unlimited.
  std::optional<double> limit() const EXCLUDES(mu_);

 private:
  void Leave() EXCLUDES(mu_);
  // Applies a throttle another process saw since this gate last looked.
  void FollowNode(Clock::time_point now) REQUIRES(mu_);
  void Decrease(Clock::time_point now) REQUIRES(mu_);

  const std::string target_;
  const ThrottleTuning tuning_;
  const std::shared_ptr<NodeThrottleTable> node_;
  const uint64_t target_hash_;

  mutable Mutex mu_;
  std::condition_variable_any changed_;
  double limit_ GUARDED_BY(mu_) = 0;  // 0: unlimited
  int in_flight_ GUARDED_BY(mu_) = 0;
  int in_flight_at_cut_ GUARDED_BY(mu_) = 0;
  Clock::time_point paused_until_ GUARDED_BY(mu_){};
  Clock::time_point last_decrease_ GUARDED_BY(mu_){};
  int throttles_in_a_row_ GUARDED_BY(mu_) = 0;
  int node_slot_ GUARDED_BY(mu_) = -1;  // the target's entry in node_; -1 until it has one
  uint64_t node_throttles_seen_ GUARDED_BY(mu_) = 0;
};

/// The process-wide gate of `url`'s target (ThrottleTarget), created on first use, shared with
/// the user's other processes on the node through the node-wide table.
RequestThrottle& ThrottleFor(std::string_view url);

/// Executes the request `build` makes through its target's gate. A throttle reply is waited out
/// at the gate and the request built afresh (a signature carries the time) and made again,
/// until `deadline`, after which the throttle reply is returned like any other; `sink` and
/// `still_wanted` are Transport::Execute's and Enter's. `gate`, when given, keeps the gate
/// found for the first request, so that a caller making several (a read's attempts) looks it up
/// once.
Result<Response> ExecuteThroughGate(Transport& transport,
                                    const std::function<Result<Request>()>& build,
                                    const BodySink& sink,
                                    std::chrono::steady_clock::time_point deadline,
                                    const std::function<Status()>& still_wanted = {},
                                    RequestThrottle** gate = nullptr);

}  // namespace ferry::http
