#include "files/file_encoding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry::internal_files {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

EncodingDecision Decide(const std::vector<std::string>& names,
                        FileEncoding asked = FileEncoding::kAuto) {
  return DecideFileEncoding(asked, names.size(),
                            [&names](size_t i) -> std::string_view { return names[i]; });
}

TEST(FileEncoding, OneStrayFileDoesNotChangeTheKindItIsReported) {
  const std::vector<std::string> names = {"cat/a.jpg", "cat/notes.txt", "dog/b.JPEG", "dog/c.jpg"};
  const EncodingDecision d = Decide(names);
  EXPECT_EQ(d.encoding, "jpeg");
  EXPECT_EQ(d.reason, "3 of 4 files are named .jpg/.jpeg");
  EXPECT_THAT(d.others, ElementsAre(1u));
  const Status error = OtherFilesError(
      d, names.size(), [&names](size_t i) -> std::string_view { return names[i]; }, "s3://b/raw",
      "pass --skip-other");
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("s3://b/raw: 1 of 4 files is not named like the jpeg"));
  EXPECT_THAT(error.message(), HasSubstr("cat/notes.txt; pass --skip-other"));
}

TEST(FileEncoding, TheMostCommonImageKindWinsAndTiesAreBytes) {
  EXPECT_EQ(Decide({"a.png", "b.PNG", "c.jpg"}).encoding, "png");
  EXPECT_THAT(Decide({"a.png", "b.PNG", "c.jpg"}).others, ElementsAre(2u));
  const EncodingDecision all = Decide({"a.jpg", "b.jpeg"});
  EXPECT_EQ(all.reason, "all 2 files are named .jpg/.jpeg");
  EXPECT_THAT(all.others, IsEmpty());
  // No kind has more files than each other kind: bytes, which holds every file.
  const EncodingDecision tie = Decide({"a.jpg", "b.txt"});
  EXPECT_EQ(tie.encoding, "bytes");
  EXPECT_THAT(tie.others, IsEmpty());
  EXPECT_THAT(tie.reason, HasSubstr("1 .jpg/.jpeg, 0 .png, 1 other"));
  EXPECT_EQ(Decide({"a.jpg", "b.png"}).encoding, "bytes");
  EXPECT_EQ(Decide({"a.bin", "b.txt", "c.jpg"}).encoding, "bytes");
  EXPECT_EQ(Decide({"a.bin"}).reason, "no file is named .jpg/.jpeg or .png");
  EXPECT_EQ(Decide({}).encoding, "bytes");
  // A name that merely contains ".jpg" is not one.
  EXPECT_EQ(Decide({"a.jpg.txt", "b.jpgx", "c.jpg"}).encoding, "bytes");
}

TEST(FileEncoding, AForcedChoiceReportsEveryFileOfAnotherKind) {
  const EncodingDecision png = Decide({"a.jpg", "b.png", "c.txt"}, FileEncoding::kPng);
  EXPECT_EQ(png.encoding, "png");
  EXPECT_EQ(png.reason, "png was asked for");
  EXPECT_THAT(png.others, ElementsAre(0u, 2u));
  EXPECT_THAT(Decide({"a.jpg", "b.txt"}, FileEncoding::kBytes).others, IsEmpty());
  EXPECT_EQ(ParseFileEncoding("jpeg", "--encoding").value(), FileEncoding::kJpeg);
  auto bad = ParseFileEncoding("jpg", "--encoding");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("--encoding must be auto, jpeg, png or bytes"));
}

TEST(FileEncoding, DescribesTheFirstOthersAndCountsTheRest) {
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back("x" + std::to_string(i) + ".jpg");
  for (int i = 0; i < 7; ++i) names.push_back("n" + std::to_string(i) + ".txt");
  const EncodingDecision d = Decide(names);
  EXPECT_EQ(DescribeOthers(
                d, [&names](size_t i) -> std::string_view { return names[i]; }, 2),
            "n0.txt, n1.txt and 5 more");
}

TEST(FileEncoding, StartsLikeChecksTheMagicBytes) {
  EXPECT_TRUE(StartsLike("jpeg", "\xFF\xD8\xFF\xE0rest"));
  EXPECT_FALSE(StartsLike("jpeg", "GIF89a"));
  EXPECT_TRUE(StartsLike("png", std::string_view("\x89PNG\r\n\x1A\n....", 12)));
  EXPECT_FALSE(StartsLike("png", "\x89PNG"));
  EXPECT_TRUE(StartsLike("bytes", ""));
}

}  // namespace
}  // namespace ferry::internal_files
