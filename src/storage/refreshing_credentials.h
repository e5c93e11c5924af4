// RefreshingCredentials<C>: the credentials a store signs each request with, from one source
// (static keys, an STS role, a cloud's token endpoint), kept current while training runs.
//
// C is a value type with `std::optional<std::chrono::system_clock::time_point> expiration`
// (none: they never expire, and are fetched once). The rules:
//   - Current() returns the cached credentials while they are valid: until `expiration` less a
//     margin (a tenth of their life, at most 30 s), so that a request signed now is not refused
//     on arrival.
//   - From their refresh point - 80 % of their life or 5 minutes before they expire, whichever
//     is earlier, but never before half their life - the next Current() still returns them and
//     starts one fetch in the background. A request never waits for a refresh while the
//     credentials it would sign with are valid.
//   - A background fetch that fails is tried again with backoff (1 s doubling to 30 s) while the
//     credentials are valid; once they are not, Current() fetches itself (one caller at a time;
//     the others wait for its result) and returns the failure, named by the source, when it fails:
//     kUnauthenticated with the cause's message, which a store does not retry.
//   - Expire(c): the store was told that c expired or was revoked (a 401/403 saying so): the next
//     Current() fetches anew, unless another caller already has.
//   - Reject(): the same when the store does not know which credentials the refused request
//     carried: the cached ones are dropped unless they were fetched in the last 5 s - then they
//     are newer than what that request carried, and many requests refused at once cost one
//     fetch, not one each.
//
// Nothing here logs or prints a credential: the source name says where they came from. Each new
// set of temporary credentials is logged (info) with its source and life.
//
// Thread-safety: every method may be called from any thread; `fetch` runs on one thread at a time.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "base/log.h"
#include "base/mutex.h"
#include "ferry/result.h"

namespace ferry::internal_storage {

using WallClock = std::function<std::chrono::system_clock::time_point()>;

/// When credentials issued at `issued` that expire at `expiration` should be renewed (above).
inline std::chrono::system_clock::time_point CredentialRefreshTime(
    std::chrono::system_clock::time_point issued,
    std::chrono::system_clock::time_point expiration) {
  using std::chrono::minutes;
  const auto life = expiration - issued;
  const auto early = std::min(life * 4 / 5, life - minutes(5));
  return issued + std::max(life / 2, early);
}

/// The margin before `expiration` past which credentials are no longer used.
inline std::chrono::system_clock::duration CredentialExpiryMargin(
    std::chrono::system_clock::time_point issued,
    std::chrono::system_clock::time_point expiration) {
  return std::min<std::chrono::system_clock::duration>((expiration - issued) / 10,
                                                       std::chrono::seconds(30));
}

template <typename C>
class RefreshingCredentials {
 public:
  using Fetch = std::function<Result<C>()>;

  /// `source` names where `fetch` gets credentials, for messages ("web identity (STS
  /// AssumeRoleWithWebIdentity)"); `clock` is the system clock when empty.
  RefreshingCredentials(std::string source, Fetch fetch, WallClock clock = {})
      : source_(std::move(source)), fetch_(std::move(fetch)), clock_(std::move(clock)) {
    if (!clock_) clock_ = [] { return std::chrono::system_clock::now(); };
  }
  ~RefreshingCredentials() {
    std::jthread refresher;
    {
      MutexLock lock(mu_);
      refresher = std::move(refresher_);
    }
  }
  RefreshingCredentials(const RefreshingCredentials&) = delete;
  RefreshingCredentials& operator=(const RefreshingCredentials&) = delete;

  const std::string& source() const { return source_; }

  Result<C> Current() {
    {
      MutexLock lock(mu_);
      const auto now = clock_();
      if (cached_ && Valid(now)) {
        if (cached_->expiration && now >= refresh_at_ && !refreshing_ && now >= next_attempt_) {
          StartRefresh();
        }
        return *cached_;
      }
    }
    // None, or no longer valid: fetch here, one caller at a time.
    MutexLock fetching(fetch_mu_);
    {
      MutexLock lock(mu_);
      if (cached_ && Valid(clock_())) return *cached_;  // another caller fetched meanwhile
    }
    const auto started = clock_();
    Result<C> fetched = fetch_();
    MutexLock lock(mu_);
    if (!fetched) {
      last_error_ = fetched.status();
      // kUnauthenticated whatever the cause: a request must not be retried on it (the source
      // has been retried in the background for as long as the old credentials were valid).
      return UnauthenticatedError(
          fmt::format("credentials from {}: {}", source_, fetched.status().message()));
    }
    Store(*fetched, started);
    return *cached_;
  }

  /// The store was told that `rejected` expired or was revoked: they are not used again.
  void Expire(const C& rejected) {
    MutexLock lock(mu_);
    if (cached_ && *cached_ == rejected) cached_.reset();
  }

  /// A request signed with credentials of this provider was refused as expired (above).
  void Reject() {
    MutexLock lock(mu_);
    if (cached_ && std::chrono::steady_clock::now() - fetched_at_ >= std::chrono::seconds(5)) {
      cached_.reset();
    }
  }

  /// Waits until no background refresh is running (tests; shutdown).
  void WaitForRefresh() {
    MutexLock lock(mu_);
    idle_.wait(lock, [this]() REQUIRES(mu_) { return !refreshing_; });
  }

  /// The failure of the last fetch, if the last one failed (doctor; messages).
  Status last_error() const {
    MutexLock lock(mu_);
    return last_error_;
  }

 private:
  bool Valid(std::chrono::system_clock::time_point now) const REQUIRES(mu_) {
    return !cached_->expiration || now < *cached_->expiration - margin_;
  }

  void Store(C credentials, std::chrono::system_clock::time_point issued) REQUIRES(mu_) {
    if (credentials.expiration) {
      refresh_at_ = CredentialRefreshTime(issued, *credentials.expiration);
      margin_ = CredentialExpiryMargin(issued, *credentials.expiration);
      // Which source and for how long; never the credentials.
      Log().info("credentials: new ones from {}, valid for {} s", source_,
                 std::chrono::duration_cast<std::chrono::seconds>(*credentials.expiration - issued)
                     .count());
    }
    cached_ = std::move(credentials);
    fetched_at_ = std::chrono::steady_clock::now();
    last_error_ = Status::Ok();
    backoff_ = std::chrono::seconds(1);
    next_attempt_ = {};
  }

  void StartRefresh() REQUIRES(mu_) {
    refreshing_ = true;
    // The previous refresher has finished (refreshing_ was false): assigning joins it at once.
    refresher_ = std::jthread([this] {
      const auto started = clock_();
      Result<C> fetched = fetch_();
      MutexLock lock(mu_);
      if (fetched) {
        Store(std::move(*fetched), started);
      } else {
        last_error_ = fetched.status();
        next_attempt_ = clock_() + backoff_;
        backoff_ =
            std::min<std::chrono::system_clock::duration>(backoff_ * 2, std::chrono::seconds(30));
      }
      refreshing_ = false;
      idle_.notify_all();
    });
  }

  const std::string source_;
  const Fetch fetch_;
  WallClock clock_;
  Mutex fetch_mu_;  // held by the one caller that fetches in the foreground
  mutable Mutex mu_;
  std::condition_variable_any idle_;
  std::optional<C> cached_ GUARDED_BY(mu_);
  std::chrono::system_clock::time_point refresh_at_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point fetched_at_ GUARDED_BY(mu_);  // elapsed, not wall time
  std::chrono::system_clock::duration margin_ GUARDED_BY(mu_){};
  std::chrono::system_clock::time_point next_attempt_ GUARDED_BY(mu_);
  std::chrono::system_clock::duration backoff_ GUARDED_BY(mu_) = std::chrono::seconds(1);
  Status last_error_ GUARDED_BY(mu_);
  bool refreshing_ GUARDED_BY(mu_) = false;
  std::jthread refresher_ GUARDED_BY(mu_);
};

}  // namespace ferry::internal_storage
