#include "storage/http/http_date.h"

#include <gtest/gtest.h>

#include <chrono>

namespace ferry::http {
namespace {

using std::chrono::system_clock;

int64_t UnixMillis(system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TEST(ParseHttpDate, ReadsTheImfFixdate) {
  auto t = ParseHttpDate("Wed, 12 Oct 2009 17:50:00 GMT");
  ASSERT_TRUE(t);
  EXPECT_EQ(UnixMillis(*t), 1255369800000);
  t = ParseHttpDate("Tue, 07 Jan 2025 12:34:56 GMT");
  ASSERT_TRUE(t);
  EXPECT_EQ(system_clock::to_time_t(*t), 1736253296);
  // Leap second and the last moment of a leap year.
  EXPECT_TRUE(ParseHttpDate("Sat, 31 Dec 2016 23:59:60 GMT"));
  EXPECT_EQ(system_clock::to_time_t(*ParseHttpDate("Thu, 29 Feb 2024 00:00:00 GMT")), 1709164800);
}

TEST(ParseHttpDate, AcceptsAOneDigitDay) {
  // As AWS's own examples write it.
  auto t = ParseHttpDate("Sun, 1 Jan 2006 12:00:00 GMT");
  ASSERT_TRUE(t);
  EXPECT_EQ(UnixMillis(*t), 1136116800000);
}

TEST(ParseHttpDate, RefusesWhatIsNotAnImfFixdate) {
  EXPECT_FALSE(ParseHttpDate(""));
  EXPECT_FALSE(ParseHttpDate("yesterday"));
  EXPECT_FALSE(ParseHttpDate("2025-01-07T12:34:56Z"));
  EXPECT_FALSE(ParseHttpDate("Tue, 07 Foo 2025 12:34:56 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue, 07 Jan 2025 25:34:56 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue, 07 Jan 2025 12:60:56 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue, 00 Jan 2025 12:34:56 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue, 32 Jan 2025 12:34:56 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue, 007 Jan 2025 12:34:56 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue, 07 Jan 2025 12:34:56 UTC"));
  EXPECT_FALSE(ParseHttpDate("Tue, 07 Jan 2025 12:34:56 GMT trailing"));
  EXPECT_FALSE(ParseHttpDate("Tue, 07 Jan 2025 1:34:56 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue, 07 Jan 2025 +1:34:56 GMT"));
  // The obsolete forms RFC 7231 lets servers receive but no store sends.
  EXPECT_FALSE(ParseHttpDate("Tuesday, 07-Jan-25 12:34:56 GMT"));
  EXPECT_FALSE(ParseHttpDate("Tue Jan  7 12:34:56 2025"));
}

TEST(ParseHttpDate, RefusesYearsTheClockCannotHold) {
  EXPECT_FALSE(ParseHttpDate("Wed, 12 Oct 99999 17:50:00 GMT"));
  EXPECT_FALSE(ParseHttpDate("Wed, 12 Oct 9999 17:50:00 GMT"));
  EXPECT_FALSE(ParseHttpDate("Wed, 12 Oct 1899 17:50:00 GMT"));
  EXPECT_TRUE(ParseHttpDate("Wed, 31 Dec 2199 23:59:59 GMT"));
}

TEST(FormatHttpDate, WritesTheImfFixdateInGmt) {
  EXPECT_EQ(FormatHttpDate(system_clock::from_time_t(1736253296)), "Tue, 07 Jan 2025 12:34:56 GMT");
  EXPECT_EQ(FormatHttpDate(system_clock::from_time_t(0)), "Thu, 01 Jan 1970 00:00:00 GMT");
  // Sub-second parts are dropped, not rounded.
  EXPECT_EQ(FormatHttpDate(system_clock::from_time_t(0) + std::chrono::milliseconds(999)),
            "Thu, 01 Jan 1970 00:00:00 GMT");
}

TEST(FormatHttpDate, IsReadBackByParseHttpDate) {
  const auto t = system_clock::from_time_t(1136116800);
  EXPECT_EQ(ParseHttpDate(FormatHttpDate(t)), t);
}

TEST(ParseIso8601, ReadsUtcWithOptionalFraction) {
  auto t = ParseIso8601("2009-10-12T17:50:30.123Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(UnixMillis(*t), 1255369830123);
  EXPECT_EQ(UnixMillis(*ParseIso8601("2009-10-12T17:50:30Z")), 1255369830000);
  EXPECT_EQ(UnixMillis(*ParseIso8601("2009-10-12T17:50:30.5Z")), 1255369830500);
  EXPECT_EQ(UnixMillis(*ParseIso8601("2009-10-12T17:50:30.123456Z")), 1255369830123);
  EXPECT_EQ(UnixMillis(*ParseIso8601("2009-10-12T17:50:30+00:00")), 1255369830000);
}

TEST(ParseIso8601, RefusesOtherZonesAndFormsAndYearsOutOfRange) {
  EXPECT_FALSE(ParseIso8601("2009-10-12T17:50:30"));
  EXPECT_FALSE(ParseIso8601("2009-10-12"));
  EXPECT_FALSE(ParseIso8601("2009-10-12T17:50:30+01:00"));
  EXPECT_FALSE(ParseIso8601("2009-10-12T17:50:30.Z"));
  EXPECT_FALSE(ParseIso8601("Wed, 12 Oct 2009 17:50:00 GMT"));
  // Beyond what the clock holds (a hostile listing): refused, not overflowed.
  EXPECT_FALSE(ParseIso8601("12338-01-01T00:00:00Z"));
  EXPECT_TRUE(ParseIso8601("2199-12-31T23:59:59Z"));
}

}  // namespace
}  // namespace ferry::http
