#include "storage/http/http_date.h"

#include <fmt/format.h>
#include <time.h>

#include <array>
#include <cstring>
#include <ctime>

#include "base/ascii.h"

namespace ferry::http {
namespace {

constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

std::optional<std::chrono::system_clock::time_point> TimeFromUtc(std::tm& tm) {
  if (tm.tm_year < 0 || tm.tm_year > 300) return std::nullopt;
  const time_t t = ::timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(t);
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> ParseHttpDate(std::string_view text) {
  // "Www, " then the day; the weekday says nothing the date does not, so it is not checked.
  if (text.size() < 5 || text.substr(3, 2) != ", ") return std::nullopt;
  text.remove_prefix(5);
  const size_t day_digits = text.find(' ');
  if (day_digits != 1 && day_digits != 2) return std::nullopt;
  const auto day = ParseUint(text.substr(0, day_digits));
  text.remove_prefix(day_digits);
  // " Mmm YYYY HH:MM:SS GMT": fixed columns from here.
  if (text.size() != 22 || text[0] != ' ' || text[4] != ' ' || text[9] != ' ' || text[12] != ':' ||
      text[15] != ':' || text.substr(18) != " GMT") {
    return std::nullopt;
  }
  const auto year = ParseUint(text.substr(5, 4));
  const auto hour = ParseUint(text.substr(10, 2));
  const auto minute = ParseUint(text.substr(13, 2));
  const auto second = ParseUint(text.substr(16, 2));
  int month = -1;
  for (int i = 0; i < 12; ++i) {
    if (text.substr(1, 3) == kMonths[i]) month = i;
  }
  if (!day || !year || !hour || !minute || !second || month < 0 || *day < 1 || *day > 31 ||
      *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = static_cast<int>(*year) - 1900;
  tm.tm_mon = month;
  tm.tm_mday = static_cast<int>(*day);
  tm.tm_hour = static_cast<int>(*hour);
  tm.tm_min = static_cast<int>(*minute);
  tm.tm_sec = static_cast<int>(*second);
  return TimeFromUtc(tm);
}

std::string FormatHttpDate(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT", kDays[tm.tm_wday], tm.tm_mday,
                     kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::optional<std::chrono::system_clock::time_point> ParseIso8601(std::string_view text) {
  const std::string s(text);
  std::tm tm{};
  const char* end = ::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  std::chrono::milliseconds fraction{0};
  if (*end == '.') {
    ++end;
    int digits = 0;
    int64_t ms = 0;
    while (*end >= '0' && *end <= '9') {
      if (digits < 3) ms = ms * 10 + (*end - '0');
      ++digits;
      ++end;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 3; ++i) ms *= 10;
    fraction = std::chrono::milliseconds(ms);
  }
  if (std::strcmp(end, "Z") != 0 && std::strcmp(end, "+00:00") != 0) return std::nullopt;
  auto t = TimeFromUtc(tm);
  if (!t) return std::nullopt;
  return *t + fraction;
}

}  // namespace ferry::http
