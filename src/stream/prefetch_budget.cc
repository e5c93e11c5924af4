#include "stream/prefetch_budget.h"

#include <algorithm>
#include <climits>

#include "ferry/metrics/metrics.h"

namespace ferry::internal_stream {
namespace {

void ReportInFlight(uint64_t bytes) {
  static metrics::Gauge& gauge = metrics::GetGauge("/ferry/stream/bytes_in_flight");
  gauge.Set(static_cast<int64_t>(bytes));
}

}  // namespace

PrefetchBudget::PrefetchBudget(uint64_t max_bytes_in_flight, bool cache_limited,
                               std::function<uint64_t()> byte_budget)
    : max_bytes_in_flight_(max_bytes_in_flight),
      cache_limited_(cache_limited),
      byte_budget_(std::move(byte_budget)),
      cap_(max_bytes_in_flight) {}

bool PrefetchBudget::Fits(uint64_t bytes) const {
  const uint64_t counted = cache_limited_ ? ahead_ : in_flight_;
  return counted == 0 || counted + bytes <= cap_;
}

void PrefetchBudget::Started(uint64_t bytes) {
  in_flight_ += bytes;
  ahead_ += bytes;
  ReportInFlight(in_flight_);
}

void PrefetchBudget::Landed(uint64_t bytes) {
  in_flight_ -= bytes;
  ReportInFlight(in_flight_);
}

void PrefetchBudget::Released(uint64_t bytes) { ahead_ -= bytes; }

bool PrefetchBudget::NeedsRecheck(Clock::time_point now) const {
  return byte_budget_ && now - checked_ >= kRecheckInterval;
}

void PrefetchBudget::Recheck(uint64_t budget, Clock::time_point now) {
  checked_ = now;
  cap_ = std::min(max_bytes_in_flight_, budget);
  metrics::GetGauge("/ferry/stream/max_bytes_ahead")
      .Set(static_cast<int64_t>(std::min<uint64_t>(cap_, INT64_MAX)));
}

}  // namespace ferry::internal_stream
