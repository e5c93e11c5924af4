#include "storage/http/store_checksum.h"

#include <gtest/gtest.h>

namespace ferry::http {
namespace {

// md5("hello") = 5d41402abc4b2a76b9719d911017c592 = base64 XUFAKrxLKna5cZ2REBfFkg==
constexpr const char* kHelloHex = "5d41402abc4b2a76b9719d911017c592";
constexpr const char* kHelloBase64 = "XUFAKrxLKna5cZ2REBfFkg==";

Headers With(std::initializer_list<std::pair<const char*, const char*>> fields) {
  Headers headers;
  for (const auto& [name, value] : fields) headers.Add(name, value);
  return headers;
}

TEST(ChecksumFromS3Headers, AnEtagThatIsAnMd5) {
  const ObjectChecksum md5 =
      ChecksumFromS3Headers(With({{"ETag", "\"5D41402ABC4B2A76B9719D911017C592\""}}));
  EXPECT_EQ(md5.kind, ChecksumKind::kMd5);
  EXPECT_EQ(md5.hex, kHelloHex);
  EXPECT_EQ(md5.from, "ETag");
  EXPECT_EQ(ChecksumFromS3Headers(With({{"ETag", "\"5d41402abc4b2a76b9719d911017c592\""},
                                        {"x-amz-server-side-encryption", "AES256"}}))
                .hex,
            kHelloHex);
}

TEST(ChecksumFromS3Headers, EtagsThatAreNotMd5sGiveNone) {
  for (const auto& headers : {
           With({{"ETag", "\"5d41402abc4b2a76b9719d911017c592-3\""}}),  // multipart
           With({{"ETag", "\"5d41402abc4b2a76b9719d911017c592\""},
                 {"x-amz-server-side-encryption", "aws:kms"}}),
           With({{"ETag", "\"5d41402abc4b2a76b9719d911017c592\""},
                 {"x-amz-server-side-encryption", "aws:kms:dsse"}}),
           With({{"ETag", "\"5d41402abc4b2a76b9719d911017c592\""},
                 {"x-amz-server-side-encryption-customer-algorithm", "AES256"}}),
           With({{"ETag", "\"1\""}}),
           With({{"ETag", "\"zz41402abc4b2a76b9719d911017c592\""}}),
           With({}),
       }) {
    EXPECT_TRUE(ChecksumFromS3Headers(headers).empty());
  }
}

TEST(ChecksumFromS3Headers, GcsSaysItInXGoogHashAndItsCrc32cComesFirst) {
  // crc32c("hello") = 9a71bb4c = base64 mnG7TA==
  const ObjectChecksum crc = ChecksumFromS3Headers(
      With({{"ETag", "\"abc\""},
            {"x-goog-hash", std::string("crc32c=mnG7TA==, md5=").append(kHelloBase64).c_str()}}));
  EXPECT_EQ(crc.kind, ChecksumKind::kCrc32c);
  EXPECT_EQ(crc.hex, "9a71bb4c");
  EXPECT_EQ(crc.from, "x-goog-hash");
  const ObjectChecksum md5 = ChecksumFromS3Headers(With(
      {{"ETag", "\"abc\""}, {"x-goog-hash", std::string("md5=").append(kHelloBase64).c_str()}}));
  EXPECT_EQ(md5.kind, ChecksumKind::kMd5);
  EXPECT_EQ(md5.hex, kHelloHex);
  EXPECT_EQ(FromGoogHash("crc32c=mnG7TA==,md5=x", "md5"), "");
  EXPECT_TRUE(FromGoogHash("md5=notbase64!", "md5").empty());
  EXPECT_TRUE(FromGoogHash("md5=aGVsbG8=", "md5").empty());        // not 16 bytes
  EXPECT_TRUE(FromGoogHash("crc32c=aGVsbG8=", "crc32c").empty());  // not 4
  EXPECT_TRUE(FromGoogHash("xcrc32c=mnG7TA==", "crc32c").empty());
}

TEST(ChecksumFromS3Headers, TheCheapestFullObjectAmzChecksumBeforeTheEtag) {
  // For "hello": crc32 3610a686 (NhCmhg==), crc32c 9a71bb4c (mnG7TA==),
  // and for CRC64NVME any 8 bytes: what matters is which one is taken.
  const char* etag = "\"5d41402abc4b2a76b9719d911017c592\"";
  ObjectChecksum got = ChecksumFromS3Headers(With({{"ETag", etag},
                                                   {"x-amz-checksum-crc32", "NhCmhg=="},
                                                   {"x-amz-checksum-crc64nvme", "AAECAwQFBgc="},
                                                   {"x-amz-checksum-type", "FULL_OBJECT"}}));
  EXPECT_EQ(got.kind, ChecksumKind::kCrc64Nvme);
  EXPECT_EQ(got.hex, "0001020304050607");
  EXPECT_EQ(got.from, "x-amz-checksum-crc64nvme");
  got = ChecksumFromS3Headers(With({{"ETag", etag},
                                    {"x-amz-checksum-crc32", "NhCmhg=="},
                                    {"x-amz-checksum-crc32c", "mnG7TA=="}}));
  EXPECT_EQ(got.kind, ChecksumKind::kCrc32c);
  got = ChecksumFromS3Headers(With({{"ETag", etag}, {"x-amz-checksum-crc32", "NhCmhg=="}}));
  EXPECT_EQ(got.kind, ChecksumKind::kCrc32);
  EXPECT_EQ(got.hex, "3610a686");
  // SHA checksums are not computed: the ETag's MD5 stands.
  got = ChecksumFromS3Headers(With({{"ETag", etag}, {"x-amz-checksum-sha256", "AAAA"}}));
  EXPECT_EQ(got.kind, ChecksumKind::kMd5);
}

TEST(ChecksumFromS3Headers, AMultipartUploadsCompositeChecksumIsNotTheBytesOwn) {
  const char* etag = "\"5d41402abc4b2a76b9719d911017c592-2\"";
  EXPECT_TRUE(ChecksumFromS3Headers(With({{"ETag", etag}, {"x-amz-checksum-crc32", "NhCmhg==-2"}}))
                  .empty());
  EXPECT_TRUE(ChecksumFromS3Headers(With({{"ETag", etag},
                                          {"x-amz-checksum-crc32c", "mnG7TA=="},
                                          {"x-amz-checksum-type", "COMPOSITE"}}))
                  .empty());
  // A full-object CRC of a multipart upload (CRC64NVME always is one) is.
  EXPECT_EQ(ChecksumFromS3Headers(With({{"ETag", etag},
                                        {"x-amz-checksum-crc64nvme", "AAECAwQFBgc="},
                                        {"x-amz-checksum-type", "FULL_OBJECT"}}))
                .kind,
            ChecksumKind::kCrc64Nvme);
  // Malformed: not 8 bytes.
  EXPECT_TRUE(ChecksumFromS3Headers(With({{"x-amz-checksum-crc64nvme", "NhCmhg=="}})).empty());
}

TEST(ChecksumFromAzureHeaders, TheWholeBlobsMd5NeverARangesOne) {
  const ObjectChecksum whole = ChecksumFromAzureHeaders(200, With({{"Content-MD5", kHelloBase64}}));
  EXPECT_EQ(whole.kind, ChecksumKind::kMd5);
  EXPECT_EQ(whole.hex, kHelloHex);
  EXPECT_EQ(whole.from, "Content-MD5");
  const ObjectChecksum ranged = ChecksumFromAzureHeaders(
      206,
      With({{"Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA=="}, {"x-ms-blob-content-md5", kHelloBase64}}));
  EXPECT_EQ(ranged.hex, kHelloHex);
  EXPECT_EQ(ranged.from, "x-ms-blob-content-md5");
  EXPECT_TRUE(ChecksumFromAzureHeaders(206, With({{"Content-MD5", kHelloBase64}})).empty());
  EXPECT_TRUE(ChecksumFromAzureHeaders(200, With({})).empty());
  // A range's transactional CRC64 is not the blob's.
  EXPECT_TRUE(
      ChecksumFromAzureHeaders(206, With({{"x-ms-content-crc64", "AAECAwQFBgc="}})).empty());
}

TEST(ChecksumName, NamesEachKind) {
  EXPECT_EQ(ChecksumName(ChecksumKind::kMd5), "MD5");
  EXPECT_EQ(ChecksumName(ChecksumKind::kCrc64Nvme), "CRC64NVME");
  EXPECT_EQ(ChecksumName(ChecksumKind::kNone), "");
}

}  // namespace
}  // namespace ferry::http
