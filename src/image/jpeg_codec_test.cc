// Tests for the JPEG codec: Pillow compatibility of DecodeJpeg and EncodeJpeg, round trips, and
// refusal (never a crash) of corrupt input.
//
// The Pillow references were recorded by hand with /usr/bin/python3 and Pillow 9.4.0, which
// decodes and encodes with the system libjpeg-turbo 2.1.5. Pixel-exact and byte-exact checks
// only hold for that libjpeg-turbo, so they are skipped when the headers report another version;
// the structural checks (mode, size, closeness, errors) run everywhere.
#include "image/jpeg_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <jconfig.h>  // LIBJPEG_TURBO_VERSION_NUMBER

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "image/image_testutil.h"

namespace ferry {
namespace {

using ::ferry::internal_image_test::FromHex;
using ::ferry::internal_image_test::PatternImage;
using ::ferry::internal_image_test::Sha256Hex;
using ::testing::HasSubstr;

constexpr bool kSameLibjpegAsPillowReference = LIBJPEG_TURBO_VERSION_NUMBER == 2001005;

// ---------------------------------------------------------------------------------------------
// Files saved by Pillow 9.4.0 from PatternImage (optimize=True keeps them small), with Pillow's
// mode and sha256(Image.open(f).tobytes()).

struct JpegPillowCase {
  const char* what;
  const char* mode;
  uint32_t width;
  uint32_t height;
  const char* pixels_sha256;
  const char* jpeg_hex;
};

const JpegPillowCase kJpegPillowCases[] = {
    {"kRgb420", "RGB", 16, 8, "c865a4ab3e84ce50c94e98e83d0d4a68fabd3f6ad2798bede1629b90e653a7f2",
     "ffd8ffe000104a46494600010100000100010000ffdb00430003020203020203030303040303040508050504"
     "04050a070706080c0a0c0c0b0a0b0b0d0e12100d0e110e0b0b1016101113141515150c0f1718161418121415"
     "14ffdb00430103040405040509050509140d0b0d141414141414141414141414141414141414141414141414"
     "1414141414141414141414141414141414141414141414141414ffc000110800080010030122000211010311"
     "01ffc400160001010100000000000000000000000000000405ffc40021100003000201030500000000000000"
     "00000102030405120007110614212223ffc4001501010100000000000000000000000000000203ffc4002311"
     "0002010204070000000000000000000001020304120005062111132231616272ffda000c0301000211031100"
     "3f00bb59bbede76e53dbe0611dce62213331e32c6a957e3455b30e4e40058194d94f25f0df3e467e5ed7d6fd"
     "c0a3cf19ceb35d55a45e38b36841d1d785009825ea080aff00b338fb30e20123a74e95552474d924fa8eac9a"
     "9a88d6e5e69b901f082d551f21716d4b1c5a3ab532dca10296504c845d26ea0f004f4af73baa86f6c7ffd9"},
    {"kGray", "L", 9, 7, "6ba7fb41b0deb42207527899af4c88f661549f64a936983c19a4257adacb880e",
     "ffd8ffe000104a46494600010100000100010000ffdb00430003020203020203030303040303040508050504"
     "04050a070706080c0a0c0c0b0a0b0b0d0e12100d0e110e0b0b1016101113141515150c0f1718161418121415"
     "14ffc0000b080007000901011100ffc4001500010100000000000000000000000000000506ffc40023100001"
     "0303020700000000000000000000010204050306110008071217215695d3ffda0008010100003f00a2e176cb"
     "adab16cf90b9674b7691110c6ac93e72506a0a2de920aea2f9500a9584a54709049c761a4fa95b51f3e6de82"
     "4be1afffd9"},
    {"kCmyk", "CMYK", 8, 8, "fdc115c4a40e5e589891fe3c2ef0692a99c207eeef80e98042995f205758f5d2",
     "ffd8ffee000e41646f626500640000000000ffdb004300030202030202030303030403030405080505040405"
     "0a070706080c0a0c0c0b0a0b0b0d0e12100d0e110e0b0b1016101113141515150c0f171816141812141514ff"
     "c000140800080008044311004d11005911004b1100ffc4001600010101000000000000000000000000000403"
     "05ffc40023100002010500010403000000000000000002030104050607111400081221132223ffda000e0443"
     "004d0059004b00003f00065bee9360eebbd565bb03b2de727629eaa77b2d88362694da522b97b79f8d013225"
     "fbb08478253de44cc6454e91dc7b4109bae5d90506b2b1547c88957122a9ba8ae530c5b3c509811e91081035"
     "ab604c1f43b1104c669ed3dab40aab30b8d4ecdbf21e0ff2ae6c2a5a159ad86430148b391209195c18bc9c27"
     "f0fa818221f54bbfb8dc4f5a3631ad618c50595f5de3db829ac3471e65c4c3f9a0184312da8674e6208e4cc8"
     "993f72453dffd9"},
    {"kProgressive", "RGB", 8, 8,
     "671ba9af55a7861624cd4bd994d6036da7b3da150f3139c5fa8ee94103e29d3a",
     "ffd8ffe000104a46494600010100000100010000ffdb00430003020203020203030303040303040508050504"
     "04050a070706080c0a0c0c0b0a0b0b0d0e12100d0e110e0b0b1016101113141515150c0f1718161418121415"
     "14ffdb00430103040405040509050509140d0b0d141414141414141414141414141414141414141414141414"
     "1414141414141414141414141414141414141414141414141414ffc200110800080008030122000211010311"
     "01ffc4001500010100000000000000000000000000000003ffc4001501010100000000000000000000000000"
     "000104ffda000c03010002100310000001b8b4ffc400161001010100000000000000000000000000030500ff"
     "da0008010100010502369f3b7fffc4001f110001030305000000000000000000000003010205000431111221"
     "61b1ffda0008010301013f01951db44150030a3b8cbb76b8e9c9e57fffc4001d110002020105000000000000"
     "0000000000010203040005111372a1ffda0008010201013f01afa5477d39acc8ecdd88f06c067fffc4001d10"
     "00010207000000000000000000000000020121001112134151d1ffda0008010100063f02a402f1e24c2bb7e2"
     "47ffc400191001010100030000000000000000000000012111004151ffda0008010100013f213e20e9c0e01d"
     "7da14bcfffda000c030100020003000000100fffc40019110100020300000000000000000000000001416100"
     "1131ffda0008010301013f1027fa1d9d03166d79ffc400181101000301000000000000000000000000010011"
     "6121ffda0008010201013f102aa1dba86148c027ffc400161001010100000000000000000000000000011121"
     "ffda0008010100013f10bd6daa9e2054042c61aa7fffd9"},
};

TEST(JpegCodecTest, DecodeMatchesPillow) {
  for (const JpegPillowCase& c : kJpegPillowCases) {
    SCOPED_TRACE(c.what);
    const std::string jpeg = FromHex(c.jpeg_hex);
    Result<PilImage> image = DecodeJpeg(jpeg);
    ASSERT_TRUE(image.has_value()) << image.error().ToString();
    EXPECT_EQ(image->mode, c.mode);
    EXPECT_EQ(image->width, c.width);
    EXPECT_EQ(image->height, c.height);
    EXPECT_EQ(image->pixels.size(), size_t{c.width} * c.height *
                                        (image->mode == "L"     ? 1
                                         : image->mode == "RGB" ? 3
                                                                : 4));
    if (kSameLibjpegAsPillowReference) {
      EXPECT_EQ(Sha256Hex(image->pixels), c.pixels_sha256);
    }

    Result<ImageInfo> info = ProbeJpeg(jpeg);
    ASSERT_TRUE(info.has_value()) << info.error().ToString();
    EXPECT_EQ(*info, (ImageInfo{c.width, c.height, c.mode}));
  }
}

TEST(JpegCodecTest, ScaledDecodeShrinksByTheDenominatorRoundingUp) {
  // A smooth gradient: a scaled IDCT must give about the block averages of the full decode.
  PilImage source{.width = 67, .height = 45, .mode = "RGB", .pixels = {}};
  for (uint32_t y = 0; y < source.height; ++y) {
    for (uint32_t x = 0; x < source.width; ++x) {
      source.pixels += static_cast<char>(x * 3);
      source.pixels += static_cast<char>(y * 5);
      source.pixels += static_cast<char>(128);
    }
  }
  const std::string jpeg = EncodeJpeg(source, 95).value();
  const PilImage full = DecodeJpeg(jpeg).value();
  for (int d : {2, 4, 8}) {
    SCOPED_TRACE(d);
    Result<PilImage> scaled = DecodeJpeg(jpeg, d);
    ASSERT_TRUE(scaled.has_value()) << scaled.error().ToString();
    EXPECT_EQ(scaled->width, (67u + d - 1) / d);
    EXPECT_EQ(scaled->height, (45u + d - 1) / d);
    EXPECT_EQ(scaled->mode, "RGB");
    // Compare an interior pixel with the mean of the block it stands for.
    const uint32_t sx = scaled->width / 2, sy = scaled->height / 2;
    for (int c = 0; c < 3; ++c) {
      double sum = 0;
      for (int dy = 0; dy < d; ++dy) {
        for (int dx = 0; dx < d; ++dx) {
          sum += static_cast<unsigned char>(
              full.pixels[((sy * d + dy) * full.width + sx * d + dx) * 3 + c]);
        }
      }
      const double mean = sum / (d * d);
      const int got = static_cast<unsigned char>(scaled->pixels[(sy * scaled->width + sx) * 3 + c]);
      EXPECT_NEAR(got, mean, 4.0) << "channel " << c;
    }
  }
  EXPECT_EQ(DecodeJpeg(jpeg, 3).error().code(), StatusCode::kInvalidArgument);
}

TEST(JpegCodecTest, EncodeIsByteIdenticalToPillowSave) {
  if (!kSameLibjpegAsPillowReference)
    GTEST_SKIP() << "references recorded with libjpeg-turbo 2.1.5";
  struct Case {
    const char* mode;
    int quality;
    const char* sha256;  // of Pillow's PatternImage(mode, 24, 16).save(f, "JPEG", quality=q)
  };
  constexpr Case kCases[] = {
      {"RGB", 75, "0bb958592b6e0861b16750687b17457bb00c0d499dd602cbd756625083ba9fe2"},
      {"RGB", 95, "71f367c10f9ab6242a58db7fc643285ee0930667f4ae127bc704989c015e18a2"},
      {"L", 90, "b035259e2db8bb7aa576e1cd6b56273982f5e726c9c0433888ccae3777230914"},
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << c.mode << " quality " << c.quality);
    Result<std::string> jpeg = EncodeJpeg(PatternImage(c.mode, 24, 16), c.quality);
    ASSERT_TRUE(jpeg.has_value()) << jpeg.error().ToString();
    EXPECT_EQ(Sha256Hex(*jpeg), c.sha256);
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips.

// Smooth content (a triangle wave, no jumps) so that JPEG's error stays small and bounded.
PilImage SmoothImage(std::string mode, uint32_t width, uint32_t height) {
  const uint32_t channels = mode == "L" ? 1 : 3;
  PilImage image{width, height, std::move(mode), {}};
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      for (uint32_t c = 0; c < channels; ++c) {
        const uint32_t t = (x * 6 + y * 4 + c * 50) % 510;
        image.pixels += static_cast<char>(t < 256 ? t : 509 - t);
      }
    }
  }
  return image;
}

struct PixelError {
  int max = 0;
  double mean = 0;
};

PixelError Compare(const std::string& a, const std::string& b) {
  PixelError error;
  double sum = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const int d = std::abs(static_cast<unsigned char>(a[i]) - static_cast<unsigned char>(b[i]));
    error.max = std::max(error.max, d);
    sum += d;
  }
  error.mean = a.empty() ? 0 : sum / a.size();
  return error;
}

TEST(JpegCodecTest, RoundTripIsCloseForEveryModeAndSubsampling) {
  struct Case {
    const char* mode;
    JpegSubsampling subsampling;
  };
  constexpr Case kCases[] = {{"L", JpegSubsampling::k420},
                             {"RGB", JpegSubsampling::k444},
                             {"RGB", JpegSubsampling::k422},
                             {"RGB", JpegSubsampling::k420}};
  for (const Case& c : kCases) {
    for (auto [w, h] : {std::pair<uint32_t, uint32_t>{1, 1}, {17, 9}, {64, 48}}) {
      SCOPED_TRACE(testing::Message()
                   << c.mode << " " << static_cast<int>(c.subsampling) << " " << w << "x" << h);
      const PilImage original = SmoothImage(c.mode, w, h);
      Result<std::string> jpeg = EncodeJpeg(original, 95, c.subsampling);
      ASSERT_TRUE(jpeg.has_value()) << jpeg.error().ToString();
      Result<PilImage> decoded = DecodeJpeg(*jpeg);
      ASSERT_TRUE(decoded.has_value()) << decoded.error().ToString();
      EXPECT_EQ(decoded->mode, original.mode);
      EXPECT_EQ(decoded->width, w);
      EXPECT_EQ(decoded->height, h);
      ASSERT_EQ(decoded->pixels.size(), original.pixels.size());
      const PixelError error = Compare(decoded->pixels, original.pixels);
      EXPECT_LE(error.max, 12);
      EXPECT_LE(error.mean, 2.0);
      EXPECT_EQ(*ProbeJpeg(*jpeg), (ImageInfo{w, h, c.mode}));
    }
  }
}

TEST(JpegCodecTest, DefaultsArePillowsQuality75And420) {
  const PilImage image = PatternImage("RGB", 40, 24);
  Result<std::string> by_default = EncodeJpeg(image);
  Result<std::string> explicit_args = EncodeJpeg(image, 75, JpegSubsampling::k420);
  ASSERT_TRUE(by_default.has_value() && explicit_args.has_value());
  EXPECT_EQ(*by_default, *explicit_args);
}

TEST(JpegCodecTest, HigherQualityGivesLargerFiles) {
  const PilImage image = PatternImage("RGB", 96, 64);
  size_t previous = 0;
  for (int quality : {10, 50, 75, 90, 100}) {
    Result<std::string> jpeg = EncodeJpeg(image, quality);
    ASSERT_TRUE(jpeg.has_value()) << jpeg.error().ToString();
    EXPECT_GT(jpeg->size(), previous) << "quality " << quality;
    previous = jpeg->size();
  }
}

TEST(JpegCodecTest, EncodeRejectsBadArguments) {
  const PilImage good = PatternImage("RGB", 4, 3);
  PilImage rgba = PatternImage("RGBA", 4, 3);
  PilImage short_pixels = good;
  short_pixels.pixels.pop_back();
  PilImage empty{4, 0, "RGB", ""};
  PilImage too_wide{70000, 1, "L", std::string(70000, '\0')};
  for (const PilImage* image : {&rgba, &short_pixels, &empty, &too_wide}) {
    Result<std::string> jpeg = EncodeJpeg(*image);
    ASSERT_FALSE(jpeg.has_value());
    EXPECT_EQ(jpeg.error().code(), StatusCode::kInvalidArgument) << jpeg.error().ToString();
  }
  EXPECT_EQ(EncodeJpeg(good, 0).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeJpeg(good, 101).error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(EncodeJpeg(rgba).error().message(), HasSubstr("'RGBA'"));
}

// ---------------------------------------------------------------------------------------------
// Corrupt and unusual input: always a Status, never a crash (the dev build runs under ASan and
// UBSan).

std::string SampleJpeg() { return *EncodeJpeg(PatternImage("RGB", 24, 16), 75); }

// Offset of the payload (after the length) of the first segment with this marker.
size_t FindSegment(std::string_view jpeg, unsigned char marker) {
  size_t pos = 2;
  while (pos + 4 <= jpeg.size() && static_cast<unsigned char>(jpeg[pos]) == 0xFF) {
    const auto code = static_cast<unsigned char>(jpeg[pos + 1]);
    const size_t length = (static_cast<unsigned char>(jpeg[pos + 2]) << 8) |
                          static_cast<unsigned char>(jpeg[pos + 3]);
    if (code == marker) return pos + 4;
    pos += 2 + length;
  }
  ADD_FAILURE() << "no marker FF " << std::hex << int{marker};
  return 0;
}

void ExpectDecodeError(std::string_view data, StatusCode code, std::string_view what) {
  SCOPED_TRACE(what);
  Result<PilImage> image = DecodeJpeg(data);
  ASSERT_FALSE(image.has_value());
  EXPECT_EQ(image.error().code(), code) << image.error().ToString();
  Result<ImageInfo> info = ProbeJpeg(data);
  if (!info.has_value()) {
    EXPECT_EQ(info.error().code(), code) << info.error().ToString();
  }
}

TEST(JpegCodecTest, GarbageIsDataLoss) {
  ExpectDecodeError("", StatusCode::kDataLoss, "empty");
  ExpectDecodeError("hello, world", StatusCode::kDataLoss, "text");
  ExpectDecodeError("\xff\xd8", StatusCode::kDataLoss, "SOI only");
  ExpectDecodeError(std::string("\xff\xd8\xff\xd9", 4), StatusCode::kDataLoss, "SOI EOI");
  ExpectDecodeError(std::string("\x89PNG\r\n\x1a\n", 8), StatusCode::kDataLoss, "a PNG start");
  ExpectDecodeError(std::string("\xff\xd8") + std::string(300, '\xff'), StatusCode::kDataLoss,
                    "fill bytes only");
  EXPECT_THAT(DecodeJpeg("hello").error().message(), HasSubstr("not a JPEG"));
}

TEST(JpegCodecTest, EveryTruncationIsDataLoss) {
  const std::string jpeg = SampleJpeg();
  for (size_t n = 0; n < jpeg.size(); ++n) {
    Result<PilImage> image = DecodeJpeg(std::string_view(jpeg).substr(0, n));
    ASSERT_FALSE(image.has_value()) << "prefix of " << n << " bytes decoded";
    EXPECT_EQ(image.error().code(), StatusCode::kDataLoss) << image.error().ToString();
  }
  // A stream cut inside the scan names the cause.
  EXPECT_THAT(DecodeJpeg(std::string_view(jpeg).substr(0, jpeg.size() / 2 + 200)).error().message(),
              HasSubstr("Premature end of JPEG file"));
}

TEST(JpegCodecTest, ProbeReadsOnlyTheHeaders) {
  const std::string jpeg = SampleJpeg();
  const size_t sof = FindSegment(jpeg, 0xC0);
  Result<ImageInfo> info = ProbeJpeg(std::string_view(jpeg).substr(0, sof + 15));
  ASSERT_TRUE(info.has_value()) << info.error().ToString();
  EXPECT_EQ(*info, (ImageInfo{24, 16, "RGB"}));
}

TEST(JpegCodecTest, RecoverableCorruptionDecodesAsPillowDoes) {
  const std::string jpeg = SampleJpeg();
  const PilImage clean = *DecodeJpeg(jpeg);
  // libjpeg warns "extraneous bytes before marker" and carries on; so does Pillow.
  const std::string junk_before_eoi = jpeg.substr(0, jpeg.size() - 2) +
                                      std::string("\x00\x01\x02", 3) + jpeg.substr(jpeg.size() - 2);
  const std::string trailing_garbage = jpeg + "appended after EOI";
  for (const std::string* data : {&junk_before_eoi, &trailing_garbage}) {
    Result<PilImage> image = DecodeJpeg(*data);
    ASSERT_TRUE(image.has_value()) << image.error().ToString();
    EXPECT_EQ(*image, clean);
  }
}

TEST(JpegCodecTest, CorruptionFollowedByAFatalErrorIsDataLoss) {
  // Junk before the first DHT draws a warning; cutting the file before its scan then makes
  // libjpeg fail. TurboJPEG still calls that a warning, which the decoder must see through.
  const std::string jpeg = SampleJpeg();
  const size_t dht = FindSegment(jpeg, 0xC4) - 4;
  const size_t sos = FindSegment(jpeg, 0xDA) - 4;
  const std::string corrupt = jpeg.substr(0, dht) + "junk" + jpeg.substr(dht, sos - dht);
  ExpectDecodeError(corrupt, StatusCode::kDataLoss, "junk, then no scan");
}

TEST(JpegCodecTest, UnsupportedFramesAreDataLoss) {
  const std::string jpeg = SampleJpeg();
  const size_t sof = FindSegment(jpeg, 0xC0);  // precision, height(2), width(2), components

  std::string twelve_bit = jpeg;
  twelve_bit[sof] = 12;
  ExpectDecodeError(twelve_bit, StatusCode::kDataLoss, "12-bit");
  EXPECT_THAT(DecodeJpeg(twelve_bit).error().message(), HasSubstr("12-bit"));

  std::string two_components = jpeg;
  two_components[sof + 5] = 2;
  ExpectDecodeError(two_components, StatusCode::kDataLoss, "2 components");

  std::string zero_height = jpeg;
  zero_height[sof + 1] = 0;
  zero_height[sof + 2] = 0;
  ExpectDecodeError(zero_height, StatusCode::kDataLoss, "height 0 (DNL)");
}

TEST(JpegCodecTest, HugeDeclaredSizeIsRefusedBeforeAllocating) {
  std::string jpeg = SampleJpeg();
  const size_t sof = FindSegment(jpeg, 0xC0);
  for (size_t i = 1; i <= 4; ++i) jpeg[sof + i] = '\xff';  // 65535 x 65535
  ExpectDecodeError(jpeg, StatusCode::kResourceExhausted, "65535 x 65535");
  EXPECT_EQ(ProbeJpeg(jpeg).error().code(), StatusCode::kResourceExhausted);
}

TEST(JpegCodecTest, EveryByteFlipIsAStatusNotACrash) {
  const std::string jpeg = SampleJpeg();
  for (size_t i = 0; i < jpeg.size(); ++i) {
    for (unsigned mask : {0x01u, 0x80u, 0xFFu}) {
      std::string corrupt = jpeg;
      corrupt[i] = static_cast<char>(corrupt[i] ^ mask);
      Result<PilImage> image = DecodeJpeg(corrupt);
      if (image.has_value()) {
        const size_t channels = image->mode == "L" ? 1 : image->mode == "RGB" ? 3 : 4;
        EXPECT_EQ(image->pixels.size(), size_t{image->width} * image->height * channels);
      } else {
        EXPECT_NE(image.error().code(), StatusCode::kOk);
      }
    }
  }
}

}  // namespace
}  // namespace ferry
