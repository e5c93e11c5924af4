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

TEST(Md5FromS3Headers, AnEtagThatIsAnMd5) {
  const StoreMd5 md5 = Md5FromS3Headers(With({{"ETag", "\"5D41402ABC4B2A76B9719D911017C592\""}}));
  EXPECT_EQ(md5.hex, kHelloHex);
  EXPECT_EQ(md5.from, "ETag");
  EXPECT_EQ(Md5FromS3Headers(With({{"ETag", "\"5d41402abc4b2a76b9719d911017c592\""},
                                   {"x-amz-server-side-encryption", "AES256"}}))
                .hex,
            kHelloHex);
}

TEST(Md5FromS3Headers, EtagsThatAreNotMd5sGiveNone) {
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
    EXPECT_TRUE(Md5FromS3Headers(headers).hex.empty());
  }
}

TEST(Md5FromS3Headers, GcsSaysItInXGoogHash) {
  const StoreMd5 md5 = Md5FromS3Headers(
      With({{"ETag", "\"abc\""},
            {"x-goog-hash", std::string("crc32c=n03x6A==, md5=").append(kHelloBase64).c_str()}}));
  EXPECT_EQ(md5.hex, kHelloHex);
  EXPECT_EQ(md5.from, "x-goog-hash");
  // A composite object has only a crc32c.
  EXPECT_TRUE(Md5FromS3Headers(With({{"ETag", "\"COi4\""}, {"x-goog-hash", "crc32c=n03x6A=="}}))
                  .hex.empty());
  EXPECT_TRUE(Md5FromGoogHash("md5=notbase64!").empty());
  EXPECT_TRUE(Md5FromGoogHash("md5=aGVsbG8=").empty());  // not 16 bytes
}

TEST(Md5FromAzureHeaders, TheWholeBlobsMd5NeverARangesOne) {
  const StoreMd5 whole = Md5FromAzureHeaders(200, With({{"Content-MD5", kHelloBase64}}));
  EXPECT_EQ(whole.hex, kHelloHex);
  EXPECT_EQ(whole.from, "Content-MD5");
  const StoreMd5 ranged = Md5FromAzureHeaders(
      206,
      With({{"Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA=="}, {"x-ms-blob-content-md5", kHelloBase64}}));
  EXPECT_EQ(ranged.hex, kHelloHex);
  EXPECT_EQ(ranged.from, "x-ms-blob-content-md5");
  EXPECT_TRUE(Md5FromAzureHeaders(206, With({{"Content-MD5", kHelloBase64}})).hex.empty());
  EXPECT_TRUE(Md5FromAzureHeaders(200, With({})).hex.empty());
}

}  // namespace
}  // namespace ferry::http
