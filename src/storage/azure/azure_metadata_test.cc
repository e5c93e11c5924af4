#include "storage/azure/azure_metadata.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "storage/azure/azure_auth.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_azure {
namespace {

using ::testing::ElementsAre;

constexpr std::string_view kContainerUrl = "https://myaccount.blob.core.windows.net/data";

// Shaped like the service's answer (BOM, attributes, properties we ignore).
constexpr std::string_view kPage =
    "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults "
    "ServiceEndpoint=\"https://myaccount.blob.core.windows.net/\" ContainerName=\"data\">"
    "<Prefix>dir/</Prefix><MaxResults>3</MaxResults><Delimiter>/</Delimiter><Blobs>"
    "<Blob><Name>dir/a &amp; b.bin</Name><Properties><Creation-Time>Tue, 07 Jan 2025 12:00:00 "
    "GMT</Creation-Time><Last-Modified>Tue, 07 Jan 2025 12:34:56 GMT</Last-Modified>"
    "<Etag>0x8DC0123456789AB</Etag><Content-Length>11</Content-Length><Content-Type>"
    "application/octet-stream</Content-Type><BlobType>BlockBlob</BlobType></Properties>"
    "<OrMetadata /></Blob>"
    "<BlobPrefix><Name>dir/sub/</Name></BlobPrefix>"
    "<Blob><Name>dir/\xc3\xbc.txt</Name><Properties><Last-Modified>Tue, 07 Jan 2025 12:34:57 "
    "GMT</Last-Modified><Etag>\"0x8DC0000000000001\"</Etag><Content-Length>0</Content-Length>"
    "</Properties></Blob>"
    "<Blob><Name>dir/folder</Name><Properties><Content-Length>0</Content-Length>"
    "<ResourceType>directory</ResourceType></Properties></Blob>"
    "</"
    "Blobs><NextMarker>2!84!"
    "MDAwMDE4IWRpci9mb2xkZXIhMDAwMDI4ITk5OTktMTItMzFUMjM6NTk6NTkuOTk5OTk5OVoh"
    "</NextMarker></EnumerationResults>";

TEST(ParseListBlobs, ReadsBlobsPrefixesAndMarker) {
  auto page = ParseListBlobs(kPage, kContainerUrl);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 2u);  // the HNS directory entry is left out
  EXPECT_EQ(page->objects[0].key, "dir/a & b.bin");
  EXPECT_EQ(page->objects[0].size, 11u);
  EXPECT_EQ(page->objects[0].etag, "0x8DC0123456789AB");
  ASSERT_TRUE(page->objects[0].mtime);
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*page->objects[0].mtime), 1736253296);
  EXPECT_EQ(page->objects[1].key, "dir/\xc3\xbc.txt");
  EXPECT_EQ(page->objects[1].etag, "0x8DC0000000000001");
  EXPECT_THAT(page->prefixes, ElementsAre("dir/sub/"));
  EXPECT_EQ(page->next_marker,
            "2!84!MDAwMDE4IWRpci9mb2xkZXIhMDAwMDI4ITk5OTktMTItMzFUMjM6NTk6NTkuOTk5OTk5OVoh");
}

TEST(ParseListBlobs, LastAndEmptyPages) {
  auto page = ParseListBlobs(
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults><Blobs /><NextMarker />"
      "</EnumerationResults>",
      kContainerUrl);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->objects.empty());
  EXPECT_TRUE(page->next_marker.empty());
}

TEST(ParseListBlobs, RejectsWhatIsNotAListing) {
  auto wrong = ParseListBlobs("<Error><Code>X</Code></Error>", kContainerUrl);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kDataLoss);
  EXPECT_FALSE(ParseListBlobs("not xml", kContainerUrl).ok());
  auto bad_size = ParseListBlobs(
      "<EnumerationResults><Blobs><Blob><Name>a</Name><Properties><Content-Length>-1"
      "</Content-Length></Properties></Blob></Blobs></EnumerationResults>",
      kContainerUrl);
  ASSERT_FALSE(bad_size.ok());
  EXPECT_EQ(bad_size.status().code(), StatusCode::kDataLoss);
}

TEST(BlockId, SameLengthUniquePerUploadAndIndex) {
  std::set<std::string> ids;
  size_t length = 0;
  for (size_t i : {0, 1, 9, 10, 49'999}) {
    const std::string id = BlockId("0123456789abcdef", i);
    if (length == 0) length = id.size();
    EXPECT_EQ(id.size(), length);
    ids.insert(id);
  }
  ids.insert(BlockId("fedcba9876543210", 0));
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(Base64Decode(BlockId("0123456789abcdef", 7)).value(), "ferry-0123456789abcdef-000007");
}

TEST(BlockListXml, ListsIdsInOrder) {
  const std::string xml = BlockListXml({"QUFB", "QkJC", "Q0ND"});
  EXPECT_EQ(xml,
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>QUFB</Latest>"
            "<Latest>QkJC</Latest><Latest>Q0ND</Latest></BlockList>");
  auto parsed = ParseXml(xml);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->Children("Latest").size(), 3u);
}

}  // namespace
}  // namespace ferry::internal_azure
