#include "storage/ini_file.h"

#include <gtest/gtest.h>

namespace ferry::internal_storage {
namespace {

TEST(IniFileTest, ParsesSectionsCommentsAndWhitespace) {
  constexpr std::string_view kText =
      "# a comment\n"
      "; another\n"
      "\n"
      "[default]\n"
      "aws_access_key_id = AKIDEXAMPLE\n"
      "  aws_secret_access_key=secret/with+slash  \n"
      "\t\n"
      "[ profile   dev ]\r\n"
      "Region: eu-west-1   # inline comment\r\n"
      "output = json;not a comment\n";
  auto ini = ParseIni(kText, "config");
  ASSERT_TRUE(ini.ok()) << ini.status().ToString();
  ASSERT_NE(ini->Find("default", "aws_access_key_id"), nullptr);
  EXPECT_EQ(*ini->Find("default", "aws_access_key_id"), "AKIDEXAMPLE");
  EXPECT_EQ(*ini->Find("default", "aws_secret_access_key"), "secret/with+slash");
  ASSERT_NE(ini->FindSection("profile dev"), nullptr);
  EXPECT_EQ(*ini->Find("profile dev", "region"), "eu-west-1");  // names are lowercased
  EXPECT_EQ(*ini->Find("profile dev", "output"), "json;not a comment");
  EXPECT_EQ(ini->Find("profile dev", "missing"), nullptr);
  EXPECT_EQ(ini->FindSection("nope"), nullptr);
}

TEST(IniFileTest, NestedSettingsAndDuplicates) {
  constexpr std::string_view kText =
      "\xEF\xBB\xBF[profile x]\n"
      "s3 =\n"
      "  addressing_style = path\n"
      "  max_concurrent_requests = 20\n"
      "region = us-west-2\n"
      "  stray = ignored-as-nested-of-nothing\n"
      "region = us-east-2\n";
  auto ini = ParseIni(kText, "config");
  ASSERT_TRUE(ini.ok()) << ini.status().ToString();
  EXPECT_EQ(*ini->Find("profile x", "s3.addressing_style"), "path");
  EXPECT_EQ(*ini->Find("profile x", "s3.max_concurrent_requests"), "20");
  EXPECT_EQ(*ini->Find("profile x", "region"), "us-east-2");  // the later one wins
  EXPECT_EQ(*ini->Find("profile x", "stray"), "ignored-as-nested-of-nothing");
}

TEST(IniFileTest, ErrorsNameTheLineButNeverItsText) {
  constexpr std::string_view kText =
      "[default]\n"
      "aws_access_key_id = AKID\n"
      "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";
  auto ini = ParseIni(kText, "/home/me/.aws/credentials");
  ASSERT_FALSE(ini.ok());
  EXPECT_EQ(ini.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(ini.status().message().find("/home/me/.aws/credentials:3:"), std::string::npos)
      << ini.status().message();
  EXPECT_EQ(ini.status().message().find("wJalr"), std::string::npos);
}

TEST(IniFileTest, RejectsSettingsOutsideSectionsAndBadHeaders) {
  EXPECT_EQ(ParseIni("key = value\n", "f").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseIni("[unterminated\n", "f").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseIni("[]\n", "f").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseIni("[a]\n= value\n", "f").status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(ParseIni("", "f").ok());
}

}  // namespace
}  // namespace ferry::internal_storage
