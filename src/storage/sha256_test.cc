#include "storage/sha256.h"

#include <gtest/gtest.h>

#include "base/hex.h"

namespace ferry {
namespace {

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("Welcome to Amazon S3."),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
}

TEST(Sha256, PiecesHashAsTheWhole) {
  Sha256 pieces;
  pieces.Update("Welcome to ");
  pieces.Update("");
  pieces.Update("Amazon S3.");
  EXPECT_EQ(pieces.HexDigest(), Sha256Hex("Welcome to Amazon S3."));
}

TEST(HmacSha256, Rfc4231TestCase2) {
  EXPECT_EQ(ToHex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

}  // namespace
}  // namespace ferry
