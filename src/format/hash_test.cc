// Tests of shard file hashes (spec §8): digests against known vectors, and the name checks the
// reference writer applies to its `hashes` list.
#include "format/hash.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry {
namespace {

using ::testing::HasSubstr;

std::string Hex(std::string_view algorithm, std::string_view data) {
  auto h = HashHex(algorithm, data);
  EXPECT_TRUE(h.has_value()) << algorithm << ": " << h.status().ToString();
  return h.value_or("");
}

TEST(HashHex, SpecVectorsForAbc) {
  // Spec §8 [verified].
  EXPECT_EQ(Hex("md5", "abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(Hex("sha1", "abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Hex("sha256", "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex("sha3_256", "abc"),
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532");
  EXPECT_EQ(Hex("blake2s", "abc"),
            "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
  EXPECT_EQ(Hex("xxh32", "abc"), "32d153ff");
  EXPECT_EQ(Hex("xxh64", "abc"), "44bc2cf5ad770999");
  EXPECT_EQ(Hex("xxh3_64", "abc"), "78af5f94892f3950");
  EXPECT_EQ(Hex("xxh128", "abc"), "06b05ab6733a618578af5f94892f3950");
  EXPECT_EQ(Hex("xxh3_128", "abc"), "06b05ab6733a618578af5f94892f3950");
}

TEST(HashHex, OtherHashlibAlgorithmsForAbc) {
  // Python 3.11: hashlib.new(name, b"abc").hexdigest().
  EXPECT_EQ(Hex("sha224", "abc"), "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7");
  EXPECT_EQ(Hex("sha384", "abc"),
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baec"
            "a134c825a7");
  EXPECT_EQ(Hex("sha512", "abc"),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c"
            "23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  EXPECT_EQ(Hex("sha3_224", "abc"), "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf");
  EXPECT_EQ(Hex("sha3_384", "abc"),
            "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b298d88cea927ac7f539f1ed"
            "f228376d25");
  EXPECT_EQ(Hex("sha3_512", "abc"),
            "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec5"
            "7647e3934057340b4cf408d5a56592f8274eec53f0");
  EXPECT_EQ(Hex("blake2b", "abc"),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5"
            "de4533cc9518d38aa8dbf1925ab92386edd4009923");
}

TEST(HashHex, EmptyInputAndZeroPadding) {
  EXPECT_EQ(Hex("md5", ""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Hex("sha256", ""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // xxHash digests are the integer zero-padded to full width: XXH32("") = 0x02cc5d05.
  EXPECT_EQ(Hex("xxh32", ""), "02cc5d05");
  EXPECT_EQ(Hex("xxh64", ""), "ef46db3751d8e999");
  EXPECT_EQ(Hex("xxh3_64", ""), "2d06800538d394c2");
  EXPECT_EQ(Hex("xxh128", ""), "99aa06d3014798d86001c324468d497f");
}

TEST(HashHex, DigestLengthsAndLowercase) {
  const std::vector<std::pair<std::string, size_t>> lengths = {
      {"md5", 32},      {"sha1", 40},     {"sha224", 56},   {"sha256", 64},   {"sha384", 96},
      {"sha512", 128},  {"sha3_224", 56}, {"sha3_256", 64}, {"sha3_384", 96}, {"sha3_512", 128},
      {"blake2b", 128}, {"blake2s", 64},  {"xxh32", 8},     {"xxh64", 16},    {"xxh3_64", 16},
      {"xxh128", 32},   {"xxh3_128", 32},
  };
  const std::string data(100000, '\x5a');  // long enough for every code path of xxHash
  for (const auto& [algo, length] : lengths) {
    EXPECT_TRUE(IsKnownHash(algo)) << algo;
    const std::string h = Hex(algo, data);
    EXPECT_EQ(h.size(), length) << algo;
    EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << algo << " " << h;
    // Different input, different digest; same input, same digest.
    EXPECT_NE(h, Hex(algo, data.substr(1))) << algo;
    EXPECT_EQ(h, Hex(algo, std::string(100000, '\x5a'))) << algo;
  }
  EXPECT_EQ(Hex("xxh128", data), Hex("xxh3_128", data));
}

TEST(HashNames, UnknownNames) {
  for (const char* name : {"sha512_256", "shake_128", "shake_256", "md5-sha1", "sm3", "SHA1",
                           "sha-1", "xxh3", "xxh3_32", "blake2", "", "md5 ", "crc32"}) {
    EXPECT_FALSE(IsKnownHash(name)) << name;
    auto h = HashHex(name, "abc");
    ASSERT_FALSE(h.has_value()) << name;
    EXPECT_EQ(h.error().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(h.error().message(), HasSubstr(std::string("'") + name + "'"));
  }
}

TEST(ValidateHashNames, AcceptsSortedKnownNames) {
  EXPECT_TRUE(ValidateHashNames({}).ok());
  EXPECT_TRUE(ValidateHashNames({"sha1"}).ok());
  EXPECT_TRUE(ValidateHashNames({"sha1", "xxh64"}).ok());
  EXPECT_TRUE(ValidateHashNames({"blake2s", "sha3_224", "sha3_384"}).ok());
  EXPECT_TRUE(ValidateHashNames({"md5", "sha1", "sha224", "sha256", "sha384", "sha3_224",
                                 "sha3_256", "sha3_384", "sha3_512", "sha512", "xxh128", "xxh32",
                                 "xxh3_128", "xxh3_64", "xxh64"})
                  .ok());
  // The reference does not reject duplicates.
  EXPECT_TRUE(ValidateHashNames({"sha1", "sha1"}).ok());
  EXPECT_TRUE(ValidateHashNames({"md5", "xxh64", "xxh64"}).ok());
}

TEST(ValidateHashNames, RejectsUnsortedLists) {
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"xxh64", "sha1"}, std::vector<std::string>{"sha256", "sha1"},
        std::vector<std::string>{"md5", "xxh64", "sha1"},
        std::vector<std::string>{"sha512", "sha3_256"}}) {
    const Status s = ValidateHashNames(names);
    ASSERT_FALSE(s.ok()) << names[0];
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("sorted"));
    EXPECT_THAT(s.message(), HasSubstr(names[0]));
  }
}

TEST(ValidateHashNames, RejectsUnknownNames) {
  for (const char* bad : {"sha512_256", "shake_128"}) {
    const Status s = ValidateHashNames({"md5", bad});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr(std::string("'") + bad + "'"));
    EXPECT_THAT(s.message(), HasSubstr("unknown"));
  }
}

}  // namespace
}  // namespace ferry
