#include "format/tar_scan.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace ferry::internal_format {
namespace {

using ::testing::HasSubstr;

// One 512-byte header; `magic` "ustar\0" + "00" (POSIX) or "ustar  \0" (old GNU).
std::string Header(const std::string& name, uint64_t size, char type,
                   const std::string& prefix = "", bool gnu = false) {
  std::string h(512, '\0');
  h.replace(0, std::min<size_t>(name.size(), 100), name.substr(0, 100));
  h.replace(100, 7, "0000644");
  const std::string octal = fmt::format("{:011o}", size);
  h.replace(124, 11, octal);
  h[156] = type;
  if (gnu) {
    h.replace(257, 8, std::string("ustar  \0", 8));
  } else {
    h.replace(257, 6, std::string("ustar\0", 6));
    h.replace(263, 2, "00");
    h.replace(345, prefix.size(), prefix);
  }
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  h.replace(148, 7, fmt::format("{:06o}", sum) + std::string(1, '\0'));
  return h;
}

std::string Padded(std::string data) {
  data.resize((data.size() + 511) / 512 * 512, '\0');
  return data;
}

std::string Member(const std::string& name, const std::string& data, char type = '0') {
  return Header(name, data.size(), type) + Padded(data);
}

std::string End() { return std::string(1024, '\0'); }

std::string PaxRecord(const std::string& key, const std::string& value) {
  // The length counts itself: find the fixed point.
  const std::string body = " " + key + "=" + value + "\n";
  size_t length = body.size() + 1;
  while (std::to_string(length).size() + body.size() != length) ++length;
  return std::to_string(length) + body;
}

TEST(ScanTar, ListsRegularFilesWithTheirOffsetsAndSkipsTheRest) {
  const std::string tar = Member("dir/", "", '5') + Member("dir/a.txt", "hello") +
                          Member("dir/link.txt", "", '2') + Member("b.bin", std::string(600, 'x')) +
                          End();
  auto members = ScanTar(tar, "s.tar");
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].name, "dir/a.txt");
  EXPECT_EQ(tar.substr((*members)[0].offset, (*members)[0].size), "hello");
  EXPECT_EQ((*members)[1].name, "b.bin");
  EXPECT_EQ((*members)[1].size, 600u);
  EXPECT_EQ(tar.substr((*members)[1].offset, 600), std::string(600, 'x'));
}

TEST(ScanTar, JoinsTheUstarPrefixButNotInOldGnuHeaders) {
  const std::string ustar = Header("k.jpg", 1, '0', "some/folder") + Padded("j") + End();
  EXPECT_EQ(ScanTar(ustar, "s.tar").value().at(0).name, "some/folder/k.jpg");
  const std::string gnu = Header("k.jpg", 1, '0', "", /*gnu=*/true) + Padded("j") + End();
  EXPECT_EQ(ScanTar(gnu, "s.tar").value().at(0).name, "k.jpg");
}

TEST(ScanTar, GnuLongNamesAndPaxRecordsNameTheNextMemberOnly) {
  const std::string long_name(150, 'n');
  const std::string pax = PaxRecord("path", "pax/" + long_name + ".txt") + PaxRecord("mtime", "1");
  const std::string tar = Member("././@LongLink", long_name + ".jpg" + std::string(1, '\0'), 'L') +
                          Member("short.jpg", "a") + Member("PaxHeader", pax, 'x') +
                          Member("short.txt", "b") + Member("plain.cls", "c") + End();
  auto members = ScanTar(tar, "s.tar");
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 3u);
  EXPECT_EQ((*members)[0].name, long_name + ".jpg");
  EXPECT_EQ((*members)[1].name, "pax/" + long_name + ".txt");
  EXPECT_EQ((*members)[2].name, "plain.cls");
}

TEST(ScanTar, APaxSizeOverridesTheHeaders) {
  const std::string data(700, 'z');
  std::string header = Header("big.bin", 0, '0');
  const std::string tar =
      Member("PaxHeader", PaxRecord("size", "700"), 'x') + header + Padded(data) + End();
  auto members = ScanTar(tar, "s.tar");
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 1u);
  EXPECT_EQ((*members)[0].size, 700u);
  EXPECT_EQ(tar.substr((*members)[0].offset, 700), data);
}

TEST(ScanTar, ReadsBase256Sizes) {
  std::string header = Header("a.bin", 0, '0');
  std::string size_field(12, '\0');
  size_field[0] = static_cast<char>(0x80);
  size_field[10] = 0x02;  // 0x200 = 512
  header.replace(124, 12, size_field);
  header.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : header) sum += c;
  header.replace(148, 7, fmt::format("{:06o}", sum) + std::string(1, '\0'));
  auto members = ScanTar(header + std::string(512, 'q') + End(), "s.tar");
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  EXPECT_EQ(members->at(0).size, 512u);
}

TEST(ScanTar, CorruptOrTruncatedArchivesAreDataLossNamingTheOffset) {
  std::string tar = Member("a.txt", "hello") + Member("b.txt", "world") + End();
  tar[512 + 512 + 3] ^= 1;  // inside the second header
  auto corrupt = ScanTar(tar, "s.tar");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(corrupt.status().message(), HasSubstr("s.tar: tar header at byte 1024"));
  EXPECT_THAT(corrupt.status().message(), HasSubstr("checksum"));

  const std::string cut = Header("c.bin", 5000, '0') + std::string(512, 'c');
  auto truncated = ScanTar(cut, "t.tar");
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), HasSubstr("runs past the end"));

  const std::string bad_pax = Member("PaxHeader", "99 path=x\n", 'x') + Member("a", "1") + End();
  auto pax = ScanTar(bad_pax, "p.tar");
  ASSERT_FALSE(pax.ok());
  EXPECT_THAT(pax.status().message(), HasSubstr("PAX"));

  auto not_tar = ScanTar(std::string(2000, 'x'), "n.tar");
  ASSERT_FALSE(not_tar.ok());
  EXPECT_THAT(not_tar.status().message(), HasSubstr("n.tar: tar header at byte 0"));
}

}  // namespace
}  // namespace ferry::internal_format
