#include "storage/xml/xml_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ferry {
namespace {

using ::testing::HasSubstr;

TEST(ParseXml, ReadsAnS3Listing) {
  const char* text = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><IsTruncated>true</IsTruncated>
  <Contents><Key>a &amp; b.txt</Key><Size>12</Size></Contents>
  <Contents><Key>caf&#xe9;</Key><Size>0</Size></Contents>
  <NextContinuationToken>tok</NextContinuationToken>
</ListBucketResult>)";
  auto root = ParseXml(text);
  ASSERT_TRUE(root.has_value()) << root.status().ToString();
  EXPECT_EQ(root->name, "ListBucketResult");
  EXPECT_EQ(root->ChildText("IsTruncated"), "true");
  EXPECT_EQ(root->ChildText("NextContinuationToken"), "tok");
  EXPECT_EQ(root->ChildText("Missing"), "");
  auto contents = root->Children("Contents");
  ASSERT_EQ(contents.size(), 2u);
  EXPECT_EQ(contents[0]->ChildText("Key"), "a & b.txt");
  EXPECT_EQ(contents[1]->ChildText("Key"), "caf\xc3\xa9");
  EXPECT_EQ(contents[1]->ChildText("Size"), "0");
}

TEST(ParseXml, RejectsMalformedXmlWithTheReason) {
  for (const char* bad : {"", "<a>", "<a></b>", "not xml", "<a/><b/>", "<a>&nope;</a>"}) {
    auto r = ParseXml(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code(), StatusCode::kDataLoss) << bad;
  }
  EXPECT_THAT(ParseXml("<a>\n<b></a>").error().message(), HasSubstr("line 2"));
}

TEST(ParseXml, RefusesEntityDeclarations) {
  // The "billion laughs": each entity ten times the previous one.
  const char* bomb = R"(<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<lolz>&lol2;</lolz>)";
  auto r = ParseXml(bomb);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("entities"));
}

TEST(ParseXml, LimitsNesting) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  for (int i = 0; i < 100; ++i) deep += "</a>";
  auto r = ParseXml(deep);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("64 levels"));
  std::string ok;
  for (int i = 0; i < 64; ++i) ok += "<a>";
  for (int i = 0; i < 64; ++i) ok += "</a>";
  EXPECT_TRUE(ParseXml(ok).has_value());
}

TEST(XmlEscape, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(XmlEscape(R"(a<b>&"c'd)"), "a&lt;b&gt;&amp;&quot;c&apos;d");
  EXPECT_EQ(XmlEscape("plain \xc3\xa9"), "plain \xc3\xa9");
  auto r = ParseXml("<k>" + XmlEscape("x & <y>") + "</k>");
  EXPECT_EQ(r->text, "x & <y>");
}

}  // namespace
}  // namespace ferry
