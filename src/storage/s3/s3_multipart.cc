#include "storage/s3/s3_multipart.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "base/mutex.h"

namespace ferry::internal_s3 {
namespace {

using Clock = std::chrono::steady_clock;

// What completions hand back to the calling thread. Shared, so that a transport that completes
// late can never touch a finished call's stack.
struct Mailbox {
  Mutex mu;
  std::condition_variable_any cv;
  std::deque<std::pair<int, Result<http::Response>>> done GUARDED_BY(mu);
};

struct PartState {
  int attempts = 0;
  Clock::time_point first_attempt;
};

}  // namespace

PartPlan PlanParts(uint64_t object_size, uint64_t preferred_part_size) {
  PartPlan plan;
  plan.part_size = std::max<uint64_t>(preferred_part_size, 1);
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  if (object_size > plan.part_size * kMaxParts) {
    const uint64_t needed = (object_size + kMaxParts - 1) / kMaxParts;
    plan.part_size = (needed + kMiB - 1) / kMiB * kMiB;
  }
  plan.count =
      static_cast<int>(std::max<uint64_t>(1, (object_size + plan.part_size - 1) / plan.part_size));
  return plan;
}

Result<std::vector<CompletedPart>> UploadParts(http::Transport& transport,
                                               const PartUploadOptions& options) {
  const int count = options.plan.count;
  const int max_in_flight = std::max(1, options.max_in_flight);
  auto mailbox = std::make_shared<Mailbox>();
  std::vector<CompletedPart> parts(static_cast<size_t>(count));
  std::vector<PartState> state(static_cast<size_t>(count));
  std::multimap<Clock::time_point, int> retries;  // when, part number
  int next_part = 1;
  int in_flight = 0;
  int completed = 0;
  std::optional<Status> failure;

  auto fail = [&](int number, const Status& status, std::string_view why) {
    if (failure) return;
    // "<url>: part 2 of 3: AccessDenied: ...", with the URL once although map_error put it in.
    std::string_view detail = status.message();
    if (detail.starts_with(options.url) && detail.substr(options.url.size()).starts_with(": ")) {
      detail.remove_prefix(options.url.size() + 2);
    }
    failure = Status(status.code(), fmt::format("{}: part {} of {}{}: {}", options.url, number,
                                                count, why, detail));
  };

  auto start = [&](int number) {
    PartState& s = state[static_cast<size_t>(number - 1)];
    if (s.attempts++ == 0) s.first_attempt = Clock::now();
    const uint64_t offset = static_cast<uint64_t>(number - 1) * options.plan.part_size;
    const uint64_t size = std::min(options.plan.part_size, options.object_size - offset);
    auto request = options.build(number, offset, size);
    if (!request) return fail(number, request.status(), "");
    ++in_flight;
    // The completion only queues: it runs on the transport's I/O thread (or, for a fake
    // transport, inside Submit on this one, which is why no lock is held here).
    transport.Submit(*std::move(request), {}, [mailbox, number](Result<http::Response> r) {
      {
        MutexLock lock(mailbox->mu);
        mailbox->done.emplace_back(number, std::move(r));
      }
      mailbox->cv.notify_one();
    });
  };

  auto judge = [&](int number, Result<http::Response> result) {
    Status status = result.status();
    if (result && result->status >= 300) status = options.map_error(*result);
    if (status.ok()) {
      auto etag = result->headers.Get("ETag");
      if (!etag || etag->empty()) {
        return fail(number, DataLossError("the UploadPart reply has no ETag"), "");
      }
      parts[static_cast<size_t>(number - 1)] = CompletedPart{number, std::string(*etag)};
      ++completed;
      return;
    }
    const PartState& s = state[static_cast<size_t>(number - 1)];
    const auto wait = BackoffForAttempt(options.retry, s.attempts, UnitRandom());
    const auto elapsed = Clock::now() - s.first_attempt;
    if (!IsRetryable(status.code()) || s.attempts >= options.retry.max_attempts ||
        elapsed + wait > options.retry.total_budget) {
      return fail(number, status,
                  s.attempts > 1 ? fmt::format(" (gave up after {} attempts)", s.attempts) : "");
    }
    retries.emplace(Clock::now() + wait, number);
  };

  for (;;) {
    // Start what may start: due retries first (they hold back the object), then new parts.
    while (!failure && in_flight < max_in_flight) {
      if (!retries.empty() && retries.begin()->first <= Clock::now()) {
        const int number = retries.begin()->second;
        retries.erase(retries.begin());
        start(number);
      } else if (next_part <= count) {
        start(next_part++);
      } else {
        break;
      }
    }
    if (in_flight == 0 && (failure || (retries.empty() && next_part > count))) break;

    std::deque<std::pair<int, Result<http::Response>>> done;
    {
      MutexLock lock(mailbox->mu);
      auto ready = [&]() REQUIRES(mailbox->mu) { return !mailbox->done.empty(); };
      if (!failure && !retries.empty() && in_flight < max_in_flight) {
        mailbox->cv.wait_until(lock, retries.begin()->first, ready);
      } else {
        mailbox->cv.wait(lock, ready);
      }
      done.swap(mailbox->done);
    }
    for (auto& [number, result] : done) {
      --in_flight;
      judge(number, std::move(result));
    }
  }
  if (failure) return *failure;
  if (completed != count) {
    return InternalError(fmt::format("{}: {} of {} parts uploaded", options.url, completed, count));
  }
  return parts;
}

}  // namespace ferry::internal_s3
