#include "base/boot_time.h"

#include <fmt/format.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <limits>

namespace ferry {
namespace {

using std::chrono::nanoseconds;
using std::chrono::system_clock;

constexpr int64_t kNoOverride = std::numeric_limits<int64_t>::min();
std::atomic<int64_t> override_ns{kNoOverride};  // since the epoch

int64_t Nanoseconds(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

system_clock::time_point BootTime() {
  static const int64_t boot_ns = Nanoseconds(CLOCK_REALTIME) - Nanoseconds(CLOCK_BOOTTIME);
  const int64_t overridden = override_ns.load(std::memory_order_relaxed);
  return system_clock::time_point(std::chrono::duration_cast<system_clock::duration>(
      nanoseconds(overridden != kNoOverride ? overridden : boot_ns)));
}

std::string BootId() {
  const int64_t overridden = override_ns.load(std::memory_order_relaxed);
  if (overridden != kNoOverride) return fmt::format("test-{}", overridden);
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
    return fmt::format(
        "boot-{}",
        std::chrono::duration_cast<std::chrono::seconds>(BootTime().time_since_epoch()).count());
  }();
  return id;
}

void SetBootTimeForTesting(std::optional<system_clock::time_point> boot) {
  override_ns.store(boot ? std::chrono::duration_cast<nanoseconds>(boot->time_since_epoch()).count()
                         : kNoOverride,
                    std::memory_order_relaxed);
}

}  // namespace ferry
