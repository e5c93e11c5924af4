#include "cache/digest_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"

namespace ferry::internal_cache {
namespace {

TEST(DigestRecord, FormatsOneLineAndParsesItBack) {
  const DigestRecord record{.bytes = 123456, .xxh3 = 0x00ab'cdef'0123'4567};
  const std::string line = FormatDigestRecord(record);
  EXPECT_EQ(line, "ferry-digest 1 123456 xxh3 00abcdef01234567\n");
  const auto parsed = ParseDigestRecord(line);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->bytes, record.bytes);
  EXPECT_EQ(parsed->xxh3, record.xxh3);
  EXPECT_TRUE(parsed->verified_boot.empty());

  DigestRecord verified = record;
  verified.verified_boot = "0b1c-boot";
  const auto again = ParseDigestRecord(FormatDigestRecord(verified));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->verified_boot, "0b1c-boot");
}

TEST(DigestRecord, AnythingElseIsNotARecord) {
  for (const char* text : {
           "", "\n", "ferry-digest 1 123456 xxh3 00abcdef01234567",  // cut before its newline
           "ferry-digest 1 123456 xxh3 00abcdef0123456\n",           // 15 digits
           "ferry-digest 1 123456 xxh3 00abcdef0123456g\n",          // not hex
           "ferry-digest 2 123456 xxh3 00abcdef01234567\n",          // another version
           "ferry-digest 1 12x456 xxh3 00abcdef01234567\n",
           "ferry-digest 1 123456 md5 00abcdef01234567\n",
           "ferry-digest 1 123456 xxh3 00abcdef01234567 verified\n",
           "ferry-digest 1 123456 xxh3 00abcdef01234567 verified a b\n",
           "ferry-digest 1 123456 xxh3 00abcdef01234567 checked a\n",
           "\0\0\0\0\0\0\0\0",  // what a lost block reads as
       }) {
    EXPECT_FALSE(ParseDigestRecord(text).has_value()) << text;
  }
}

TEST(DigestRecord, WrittenReadAndRemoved) {
  testing::TempDir tmp;
  const auto path = tmp / "shard.xxh3";
  auto absent = ReadDigestRecord(path);
  ASSERT_TRUE(absent.has_value());
  EXPECT_FALSE(absent->has_value());

  ASSERT_TRUE(WriteDigestRecord(path, {.bytes = 5, .xxh3 = 7}, 0600).ok());
  auto read = ReadDigestRecord(path);
  ASSERT_TRUE(read.has_value() && read->has_value());
  EXPECT_EQ((*read)->bytes, 5u);
  EXPECT_EQ((*read)->xxh3, 7u);
  EXPECT_FALSE(std::filesystem::exists(tmp / "shard.xxh3.tmp"));

  ASSERT_TRUE(WriteFileAtomically(path, "ferry-dig").ok());
  auto garbled = ReadDigestRecord(path);
  EXPECT_EQ(garbled.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(garbled.status().message(), ::testing::HasSubstr(path.string()));

  RemoveDigestRecord(path);
  EXPECT_FALSE(std::filesystem::exists(path));
  RemoveDigestRecord(path);  // a missing one is fine
}

}  // namespace
}  // namespace ferry::internal_cache
