// Tests of shard compression (spec §7): the accepted spec strings, the container formats the
// reference reader needs, round trips, and that Decompress never expands past max_size.
#include "format/compression.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/hex.h"

// Under AddressSanitizer, its malloc hook lets a test see the largest allocation a call makes.
#if defined(__SANITIZE_ADDRESS__)
#define FERRY_HAS_MALLOC_HOOKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FERRY_HAS_MALLOC_HOOKS 1
#endif
#endif
#ifdef FERRY_HAS_MALLOC_HOOKS
using MallocHook = void (*)(const volatile void*, size_t);
using FreeHook = void (*)(const volatile void*);
extern "C" int __sanitizer_install_malloc_and_free_hooks(MallocHook, FreeHook);
#endif

namespace ferry {
namespace {

using ::testing::HasSubstr;

Compression Parse(std::string_view spec) {
  auto c = Compression::Parse(spec);
  EXPECT_TRUE(c.has_value()) << spec << ": " << c.status().ToString();
  return c.has_value() ? *c : Compression::Parse("zstd").value();
}

// Deterministic data that compresses somewhat (text-like, with repeats) but not trivially.
std::string MixedData(size_t n, uint32_t seed = 1) {
  std::string out;
  out.reserve(n);
  uint32_t x = seed;
  static constexpr std::string_view kWords[] = {"shard ",   "sample ", "ferry ",       "mds ",
                                                "\x00\x01", "column ", "\xff\xfe\xfd", "index "};
  while (out.size() < n) {
    x = x * 1664525u + 1013904223u;
    if ((x >> 28) < 10) {
      out += kWords[(x >> 16) & 7];
    } else {
      out += static_cast<char>(x >> 8);
    }
  }
  out.resize(n);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parse

TEST(CompressionParse, AcceptsExactlyTheSpecsSet) {
  std::vector<std::string> accepted = {"br", "bz2", "gz", "snappy", "zstd"};
  for (int i = 0; i <= 11; ++i) accepted.push_back("br:" + std::to_string(i));
  for (int i = 1; i <= 9; ++i) accepted.push_back("bz2:" + std::to_string(i));
  for (int i = 0; i <= 9; ++i) accepted.push_back("gz:" + std::to_string(i));
  for (int i = 1; i <= 22; ++i) accepted.push_back("zstd:" + std::to_string(i));
  EXPECT_EQ(accepted.size(), 5u + 12 + 9 + 10 + 22);
  for (const auto& spec : accepted) {
    auto c = Compression::Parse(spec);
    ASSERT_TRUE(c.has_value()) << spec << ": " << c.status().ToString();
    EXPECT_EQ(c->spec(), spec);
    const size_t colon = spec.find(':');
    EXPECT_EQ(c->extension(), spec.substr(0, colon));
    if (colon != std::string::npos) {
      EXPECT_EQ(c->level(), std::stoi(spec.substr(colon + 1)));
    }
  }
}

TEST(CompressionParse, RejectsEverythingElse) {
  for (const char* spec :
       {"snappy:1", "snappy:", "zstd:0", "zstd:23", "zstd:-1", "gz:10", "gz:-1", "bz2:0", "bz2:10",
        "br:12", "br:-1", "lz4", "zstd:", "zstd:x", "zstd:3:1", "zstd:3.0", "zstd: 3", "zstd:+3",
        "ZSTD", "gzip", "brotli", "bzip2", "", ":3", "zstd7", "none", "null",
        // Only the canonical spelling of a level is in the reference's set.
        "zstd:03", "zstd:007", "gz:00", "gz:01", "br:011", "bz2:09"}) {
    auto c = Compression::Parse(spec);
    ASSERT_FALSE(c.has_value()) << "'" << spec << "' was accepted";
    EXPECT_EQ(c.error().code(), StatusCode::kInvalidArgument) << spec;
    EXPECT_THAT(c.error().message(), HasSubstr(std::string("'") + spec + "'")) << spec;
  }
}

TEST(CompressionParse, FamiliesExtensionsAndDefaultLevels) {
  struct Case {
    const char* spec;
    CompressionFamily family;
    const char* extension;
    int level;
  };
  for (const Case& c : {Case{"br", CompressionFamily::kBrotli, "br", 11},
                        Case{"bz2", CompressionFamily::kBzip2, "bz2", 9},
                        Case{"gz", CompressionFamily::kGzip, "gz", 9},
                        Case{"snappy", CompressionFamily::kSnappy, "snappy", 0},
                        Case{"zstd", CompressionFamily::kZstd, "zstd", 3},
                        Case{"zstd:7", CompressionFamily::kZstd, "zstd", 7},
                        Case{"br:0", CompressionFamily::kBrotli, "br", 0},
                        Case{"gz:1", CompressionFamily::kGzip, "gz", 1}}) {
    const Compression parsed = Parse(c.spec);
    EXPECT_EQ(parsed.family(), c.family) << c.spec;
    EXPECT_EQ(parsed.extension(), c.extension) << c.spec;
    EXPECT_EQ(parsed.spec(), c.spec);
    if (c.family != CompressionFamily::kSnappy) {
      EXPECT_EQ(parsed.level(), c.level) << c.spec;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(CompressionRoundTrip, EveryFamilyAndSeveralLevels) {
  const std::vector<std::string> inputs = {"", "a", "abc", std::string(1000, '\0'),
                                           MixedData(100000)};
  for (const char* spec : {"br", "br:0", "br:5", "bz2", "bz2:1", "gz", "gz:0", "gz:1", "gz:6",
                           "snappy", "zstd", "zstd:1", "zstd:7", "zstd:19", "zstd:22"}) {
    const Compression c = Parse(spec);
    for (const auto& input : inputs) {
      auto packed = c.Compress(input);
      ASSERT_TRUE(packed.has_value()) << spec << ": " << packed.status().ToString();
      auto unpacked = c.Decompress(*packed, input.size());
      ASSERT_TRUE(unpacked.has_value())
          << spec << " size " << input.size() << ": " << unpacked.status().ToString();
      EXPECT_TRUE(*unpacked == input) << spec << " size " << input.size();
      if (input.size() >= 1000 && std::string_view(spec) != "gz:0") {  // gz:0 only stores
        EXPECT_LT(packed->size(), input.size()) << spec;
      }
    }
  }
}

TEST(CompressionRoundTrip, OutputLargerThanOneDecoderChunk) {
  // The streaming decoders grow their output in 1 MiB steps; cross several of them.
  const std::string input = MixedData(3 * 1024 * 1024 + 17, 7);
  for (const char* spec : {"br:1", "bz2:1", "gz:1", "snappy", "zstd:1"}) {
    const Compression c = Parse(spec);
    auto packed = c.Compress(input);
    ASSERT_TRUE(packed.has_value()) << spec;
    auto unpacked = c.Decompress(*packed, input.size());
    ASSERT_TRUE(unpacked.has_value()) << spec << ": " << unpacked.status().ToString();
    EXPECT_TRUE(*unpacked == input) << spec;
    // A bound of exactly the output size is enough; one byte less is not.
    auto short_bound = c.Decompress(*packed, input.size() - 1);
    ASSERT_FALSE(short_bound.has_value()) << spec;
    EXPECT_EQ(short_bound.error().code(), StatusCode::kDataLoss) << spec;
  }
}

// ---------------------------------------------------------------------------------------------
// Container formats

TEST(CompressionFormat, ZstdIsOneFrameThatRecordsTheContentSize) {
  for (const char* spec : {"zstd", "zstd:1", "zstd:19"}) {
    for (size_t n : {size_t{0}, size_t{5}, size_t{300000}}) {
      const std::string input = MixedData(n);
      auto packed = Parse(spec).Compress(input);
      ASSERT_TRUE(packed.has_value());
      EXPECT_EQ(ZSTD_getFrameContentSize(packed->data(), packed->size()), n) << spec << " " << n;
      // Exactly one frame: the first frame spans the whole output.
      EXPECT_EQ(ZSTD_findFrameCompressedSize(packed->data(), packed->size()), packed->size())
          << spec << " " << n;
      EXPECT_EQ(ToHex(packed->substr(0, 4)), "28b52ffd");
    }
  }
}

TEST(CompressionFormat, GzipHeaderLikePython) {
  for (const char* spec : {"gz", "gz:1", "gz:9", "gz:5"}) {
    auto packed = Parse(spec).Compress("hello hello hello");
    ASSERT_TRUE(packed.has_value());
    ASSERT_GE(packed->size(), 18u);
    // ID1 ID2 CM=deflate FLG=0 (no name, no extra, no comment); OS = 255 (unknown).
    EXPECT_EQ(ToHex(packed->substr(0, 4)), "1f8b0800") << spec;
    EXPECT_EQ(static_cast<uint8_t>((*packed)[9]), 0xff) << spec;
  }
  // XFL as Python writes it: 2 at level 9, 4 at level 1.
  EXPECT_EQ(static_cast<uint8_t>(Parse("gz").Compress("x").value()[8]), 2);
  EXPECT_EQ(static_cast<uint8_t>(Parse("gz:1").Compress("x").value()[8]), 4);
  // The trailer is CRC32 and ISIZE of the input.
  const std::string packed = Parse("gz").Compress("abc").value();
  EXPECT_EQ(ToHex(packed.substr(packed.size() - 8)),
            "c2412435"
            "03000000");
}

TEST(CompressionFormat, SnappyIsTheRawBlockFormat) {
  // Raw format: varint of the uncompressed length, then elements. Not the framing format,
  // whose stream starts with the chunk "ff 06 00 00 sNaPpY".
  auto empty = Parse("snappy").Compress("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(ToHex(*empty), "00");
  auto small = Parse("snappy").Compress("abc");
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(ToHex(small->substr(0, 1)), "03");
  auto big = Parse("snappy").Compress(MixedData(300));
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(ToHex(big->substr(0, 2)), "ac02");  // 300 as a varint
  EXPECT_NE(static_cast<uint8_t>((*big)[0]), 0xff);
}

TEST(CompressionFormat, Bzip2StreamHeaderNamesTheBlockSize) {
  EXPECT_EQ(Parse("bz2").Compress("abc").value().substr(0, 4), "BZh9");
  EXPECT_EQ(Parse("bz2:1").Compress("abc").value().substr(0, 4), "BZh1");
}

// ---------------------------------------------------------------------------------------------
// Corrupt input

TEST(CompressionCorrupt, TruncatedDataIsDataLoss) {
  const std::string input = MixedData(20000);
  for (const char* spec : {"br", "bz2", "gz", "snappy", "zstd"}) {
    const Compression c = Parse(spec);
    const std::string packed = c.Compress(input).value();
    for (size_t keep : {size_t{0}, size_t{1}, packed.size() / 2, packed.size() - 1}) {
      auto r = c.Decompress(std::string_view(packed).substr(0, keep), input.size());
      ASSERT_FALSE(r.has_value()) << spec << " truncated to " << keep;
      EXPECT_EQ(r.error().code(), StatusCode::kDataLoss) << spec << " truncated to " << keep;
    }
  }
}

TEST(CompressionCorrupt, GarbageIsDataLoss) {
  const std::string garbage = "this is not compressed data at all, just text";
  for (const char* spec : {"br", "bz2", "gz", "snappy", "zstd"}) {
    auto r = Parse(spec).Decompress(garbage, 1 << 20);
    ASSERT_FALSE(r.has_value()) << spec;
    EXPECT_EQ(r.error().code(), StatusCode::kDataLoss) << spec;
    EXPECT_THAT(r.error().message(), ::testing::AnyOf(HasSubstr("corrupt"), HasSubstr("truncated")))
        << spec << ": " << r.error().message();
  }
}

TEST(CompressionCorrupt, ChecksummedFormatsCatchAFlippedByte) {
  const std::string input = MixedData(20000);
  for (const char* spec : {"bz2", "gz"}) {
    const Compression c = Parse(spec);
    std::string packed = c.Compress(input).value();
    packed[packed.size() / 2] ^= 0x10;
    auto r = c.Decompress(packed, input.size());
    ASSERT_FALSE(r.has_value()) << spec;
    EXPECT_EQ(r.error().code(), StatusCode::kDataLoss) << spec;
  }
  // gzip: a wrong CRC in the trailer.
  std::string packed = Parse("gz").Compress(input).value();
  packed[packed.size() - 6] ^= 0x01;
  EXPECT_EQ(Parse("gz").Decompress(packed, input.size()).status().code(), StatusCode::kDataLoss);
}

TEST(CompressionCorrupt, TrailingBytesAfterTheStreamAreDataLoss) {
  for (const char* spec : {"br", "bz2", "gz", "zstd"}) {
    const Compression c = Parse(spec);
    const std::string packed = c.Compress("payload payload").value() + "junk";
    auto r = c.Decompress(packed, 1 << 20);
    ASSERT_FALSE(r.has_value()) << spec;
    EXPECT_EQ(r.error().code(), StatusCode::kDataLoss) << spec;
  }
}

// ---------------------------------------------------------------------------------------------
// The max_size bound

#ifdef FERRY_HAS_MALLOC_HOOKS
// The largest single heap allocation while `tracking` is set (sanitizer malloc hook).
std::atomic<bool> tracking{false};
std::atomic<size_t> largest{0};
void OnMalloc(const volatile void*, size_t size) {
  if (!tracking.load(std::memory_order_relaxed)) return;
  size_t seen = largest.load(std::memory_order_relaxed);
  while (size > seen && !largest.compare_exchange_weak(seen, size)) {
  }
}
void OnFree(const volatile void*) {}
bool InstallHooks() { return __sanitizer_install_malloc_and_free_hooks(OnMalloc, OnFree) != 0; }
#endif

TEST(CompressionBound, OutputPastMaxSizeIsDataLossWithoutAllocatingIt) {
  constexpr size_t kInput = 64u << 20;
  constexpr uint64_t kMax = 1u << 20;
  const std::string input(kInput, 'a');
#ifdef FERRY_HAS_MALLOC_HOOKS
  static const bool hooked = InstallHooks();
  ASSERT_TRUE(hooked);
  // The hook sees a big allocation (so that the checks below cannot pass vacuously).
  largest = 0;
  tracking = true;
  std::string probe(3 * kMax, 'p');
  tracking = false;
  ASSERT_GE(largest.load(), 3 * kMax);
  ASSERT_EQ(probe.back(), 'p');
#endif
  for (const char* spec : {"br:1", "bz2:1", "gz:1", "snappy", "zstd:1"}) {
    const Compression c = Parse(spec);
    auto packed = c.Compress(input);
    ASSERT_TRUE(packed.has_value()) << spec;
    ASSERT_LT(packed->size(), kInput / 16) << spec;  // snappy's best ratio is about 21:1
    const auto start = std::chrono::steady_clock::now();
#ifdef FERRY_HAS_MALLOC_HOOKS
    largest = 0;
    tracking = true;
#endif
    auto r = c.Decompress(*packed, kMax);
#ifdef FERRY_HAS_MALLOC_HOOKS
    tracking = false;
    // Output buffers may round up, but nothing near the 64 MiB the stream expands to.
    EXPECT_LT(largest.load(), 8 * kMax) << spec << " allocated " << largest.load() << " bytes";
#endif
    ASSERT_FALSE(r.has_value()) << spec;
    EXPECT_EQ(r.error().code(), StatusCode::kDataLoss) << spec;
    EXPECT_THAT(r.error().message(), HasSubstr(std::to_string(kMax))) << spec;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << spec;
  }
}

TEST(CompressionBound, ZstdFrameClaimingAHugeContentSize) {
  // A hand-made frame: magic, descriptor 0xc0 (8-byte content size, not single segment, no
  // checksum), window descriptor, content size 2^60, then one empty last raw block.
  const std::string frame = std::string("\x28\xb5\x2f\xfd\xc0\x00", 6) +
                            std::string("\x00\x00\x00\x00\x00\x00\x00\x10", 8) +
                            std::string("\x01\x00\x00", 3);
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), uint64_t{1} << 60);
  for (uint64_t max_size : {uint64_t{0}, uint64_t{1} << 20, uint64_t{1} << 32}) {
    auto r = Parse("zstd").Decompress(frame, max_size);
    ASSERT_FALSE(r.has_value()) << max_size;
    EXPECT_EQ(r.error().code(), StatusCode::kDataLoss) << max_size;
  }
}

TEST(CompressionBound, SnappyLengthHeaderBeyondMaxSize) {
  // varint 2^32 - 1, followed by nothing.
  const std::string lie("\xff\xff\xff\xff\x0f", 5);
  auto r = Parse("snappy").Decompress(lie, 1 << 20);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kDataLoss);
  // A valid stream of 1000 bytes with max_size 999.
  const std::string packed = Parse("snappy").Compress(std::string(1000, 'q')).value();
  auto short_bound = Parse("snappy").Decompress(packed, 999);
  ASSERT_FALSE(short_bound.has_value());
  EXPECT_EQ(short_bound.error().code(), StatusCode::kDataLoss);
  EXPECT_EQ(Parse("snappy").Decompress(packed, 1000).value(), std::string(1000, 'q'));
}

TEST(CompressionBound, ZeroMaxSizeAcceptsOnlyEmptyOutput) {
  for (const char* spec : {"br", "bz2", "gz", "snappy", "zstd"}) {
    const Compression c = Parse(spec);
    auto empty = c.Decompress(c.Compress("").value(), 0);
    ASSERT_TRUE(empty.has_value()) << spec << ": " << empty.status().ToString();
    EXPECT_TRUE(empty->empty());
    auto one = c.Decompress(c.Compress("x").value(), 0);
    ASSERT_FALSE(one.has_value()) << spec;
    EXPECT_EQ(one.error().code(), StatusCode::kDataLoss) << spec;
  }
}

}  // namespace
}  // namespace ferry
