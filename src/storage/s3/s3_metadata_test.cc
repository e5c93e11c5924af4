#include "storage/s3/s3_metadata.h"

#include <gtest/gtest.h>

namespace ferry::internal_s3 {
namespace {

constexpr std::string_view kBucketUrl = "s3://bucket/";

TEST(ListObjectsV2Test, UrlEncodedPage) {
  constexpr std::string_view kXml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>photos%2F</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys>
  <Delimiter>%2F</Delimiter><EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents><Key>photos%2Fa+b%2Bc.jpg</Key><LastModified>2024-01-02T03:04:05.000Z</LastModified>
    <ETag>&quot;599bab3ed2c697f1d26842727561fd94&quot;</ETag><Size>142863</Size>
    <StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>photos%2F%E6%97%A5.jpg</Key><LastModified>2024-01-02T03:04:05.000Z</LastModified>
    <ETag>&quot;abc-2&quot;</ETag><Size>0</Size></Contents>
  <CommonPrefixes><Prefix>photos%2F2024+march%2F</Prefix></CommonPrefixes>
</ListBucketResult>)";
  auto page = ParseListObjectsV2(kXml, kBucketUrl);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "photos/a b+c.jpg");
  EXPECT_EQ(page->objects[0].size, 142863u);
  EXPECT_EQ(page->objects[0].etag, "599bab3ed2c697f1d26842727561fd94");
  ASSERT_TRUE(page->objects[0].mtime.has_value());
  EXPECT_EQ(page->objects[1].key, "photos/日.jpg");
  EXPECT_EQ(page->objects[1].etag, "abc-2");
  ASSERT_EQ(page->prefixes.size(), 1u);
  EXPECT_EQ(page->prefixes[0], "photos/2024 march/");
  EXPECT_EQ(page->next_token.value_or(""), "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(ListObjectsV2Test, PlainPageIsTakenLiterally) {
  // A server that ignored encoding-type=url: a '+' and a '%' in a key are just characters.
  constexpr std::string_view kXml =
      "<ListBucketResult><IsTruncated>false</IsTruncated>"
      "<Contents><Key>a+b%20c</Key><Size>3</Size></Contents></ListBucketResult>";
  auto page = ParseListObjectsV2(kXml, kBucketUrl);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "a+b%20c");
  EXPECT_FALSE(page->objects[0].mtime.has_value());
  EXPECT_FALSE(page->next_token.has_value());
}

TEST(ListObjectsV2Test, MalformedPages) {
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><Contents><Key>k</Key></Contents>"
                               "</ListBucketResult>",
                               kBucketUrl)
                .status()
                .code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated>"
                               "</ListBucketResult>",
                               kBucketUrl)
                .status()
                .code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(ParseListObjectsV2("<Other/>", kBucketUrl).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseListObjectsV2("not xml", kBucketUrl).status().code(), StatusCode::kDataLoss);
}

TEST(MultipartXmlTest, InitiateAndComplete) {
  auto id = ParseInitiateMultipartUpload(
      R"(<?xml version="1.0" encoding="UTF-8"?>
<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>)",
      "s3://b/k");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "VXBsb2FkIElE");
  EXPECT_EQ(
      ParseInitiateMultipartUpload("<InitiateMultipartUploadResult/>", "s3://b/k").status().code(),
      StatusCode::kDataLoss);

  EXPECT_EQ(CompleteMultipartUploadXml({{1, "\"a\""}, {2, "\"b<&>\""}}),
            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
            "<Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag></Part>"
            "<Part><PartNumber>2</PartNumber><ETag>&quot;b&lt;&amp;&gt;&quot;</ETag></Part>"
            "</CompleteMultipartUpload>");
}

TEST(MultipartXmlTest, ErrorsInsideA200Complete) {
  EXPECT_TRUE(CheckCompleteMultipartUpload("<CompleteMultipartUploadResult><ETag>\"x-3\"</ETag>"
                                           "</CompleteMultipartUploadResult>",
                                           "s3://b/k")
                  .ok());
  Status s = CheckCompleteMultipartUpload(
      "   \n  <?xml version=\"1.0\" "
      "encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code><Message>We encountered an internal "
      "error. Please try "
      "again.</Message></Error>",
      "s3://b/k");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);  // retried like any InternalError
  EXPECT_TRUE(s.message().starts_with("s3://b/k")) << s.message();
  EXPECT_EQ(
      CheckCompleteMultipartUpload("<Error><Code>InvalidPart</Code></Error>", "s3://b/k").code(),
      StatusCode::kUnknown);
  // moto's name for the success document, and servers that send none.
  EXPECT_TRUE(CheckCompleteMultipartUpload("<CompleteMultipartUploadResponse/>", "s3://b/k").ok());
  EXPECT_TRUE(CheckCompleteMultipartUpload(" \r\n", "s3://b/k").ok());
  EXPECT_EQ(CheckCompleteMultipartUpload("<Error><Code>Inter", "s3://b/k").code(),
            StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ferry::internal_s3
