// Tests for the PNG codec: Pillow 9.4 compatibility of DecodePng for every bit depth and colour
// type, round trips through EncodePng, and refusal (never a crash) of corrupt input.
//
// Two independent sources of truth:
//   * kPngPillowCases: tiny PNGs with Pillow's own mode and tobytes() SHA-256, recorded by hand
//   with
//     /usr/bin/python3 and Pillow 9.4.0 (the files were written with Python's zlib and struct so
//     that they cover flavours Pillow cannot save: 2/4-bit gray, 16-bit LA, dirty padding bits).
//   * ReferencePng: a writer built from the PNG spec (zlib + CRC-32, Adam7 by hand) that shares
//     no code with libpng, paired with PilPixels(), the expected tobytes() derived from the
//     documented Pillow rules in png_codec.h.
#include "image/png_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "image/image_testutil.h"

namespace ferry {
namespace {

using ::ferry::internal_image_test::FromHex;
using ::ferry::internal_image_test::PatternImage;
using ::ferry::internal_image_test::Sha256Hex;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Files checked against Pillow 9.4.0: Image.open(f).mode and sha256(Image.open(f).tobytes()).

struct PngPillowCase {
  const char* what;
  const char* mode;
  uint32_t width;
  uint32_t height;
  size_t pixel_bytes;
  const char* pixels_sha256;
  const char* png_hex;
};

const PngPillowCase kPngPillowCases[] = {
    {"gray 1-bit, dirty padding bits", "1", 13, 5, 10,
     "ae6a1f8622e18737b6e17895802473d66235cf3cac10589f8bf0bf98bf4ffed3",
     "89504e470d0a1a0a0000000d494844520000000d000000050100000000b6c35bbc000000174944415478da63"
     "509ac870e32cc3610106473986ba4300249504cb72c0c4590000000049454e44ae426082"},
    {"gray 2-bit", "L", 7, 4, 28,
     "636b15ce907edbec04ba77f83417ad271a612a33d715b980b12dcade5ce72a12",
     "89504e470d0a1a0a0000000d49484452000000070000000402000000002d1d6200000000144944415478da63"
     "509ac870e32cc36101064739001836038b7f00efd50000000049454e44ae426082"},
    {"gray 4-bit", "L", 9, 3, 27,
     "0609bd0e6f4e8a1eaec29175e9471007c7679c5871a697fbd12ecfe066cb8885",
     "89504e470d0a1a0a0000000d4948445200000009000000030400000000a19197ab0000001b4944415478da63"
     "509a78e3ec61060147b9ba430cc515cb124f0200424b078603e251d30000000049454e44ae426082"},
    {"gray 16-bit", "I", 5, 4, 80,
     "1a0a03101b452e1b88751f618842281e1ce0e9e536693b5b131bd2002c355153",
     "89504e470d0a1a0a0000000d494844520000000500000004100000000033c876df000000374944415478da01"
     "2c00d3ff002291d8cdc310411e7ec2007378a661c935187c07e400d5636e9bc3c400b2724400b8cd3a97f11a"
     "e6510705aaf1130ef35806e30000000049454e44ae426082"},
    {"gray+alpha 16-bit", "RGBA", 4, 3, 48,
     "052330402a4629c09896984bf51dd64af1d99a9612fb7d8c2f28e581faec4a45",
     "89504e470d0a1a0a0000000d49484452000000040000000310040000004e6dba0e0000003e4944415478da01"
     "3300ccff002291d8cdc310411e7ec27378a661c93500187c07e4d5636e9bc3c400b27244b8cd003a97f11ae6"
     "51070506a68a02f0e161af4e7f1727c06c71fc0000000049454e44ae426082"},
    {"RGB 16-bit", "RGB", 4, 3, 36,
     "282afe844c914ea21d504147bfb1566473c2ed3595dc77b577ee5edbc7a7c2d9",
     "89504e470d0a1a0a0000000d49484452000000040000000310020000006b06e5d2000000564944415478da01"
     "4b00b4ff002291d8cdc310411e7ec27378a661c935187c07e4d5636e9b00c3c400b27244b8cd3a97f11ae651"
     "070506a68a02f0e161af0037f86cb9078738c370f07e8d3b583bad38c275f34aed056a199f22f2f33ee88d00"
     "00000049454e44ae426082"},
    {"RGBA 16-bit", "RGBA", 3, 3, 36,
     "282afe844c914ea21d504147bfb1566473c2ed3595dc77b577ee5edbc7a7c2d9",
     "89504e470d0a1a0a0000000d494844520000000300000003100600000006b869fc000000564944415478da01"
     "4b00b4ff002291d8cdc310411e7ec27378a661c935187c07e4d5636e9b00c3c400b27244b8cd3a97f11ae651"
     "070506a68a02f0e161af0037f86cb9078738c370f07e8d3b583bad38c275f34aed056a199f22f2f33ee88d00"
     "00000049454e44ae426082"},
    {"palette 1-bit", "P", 11, 3, 33,
     "04f636b09b662c0fe9082fc457aae85a4804aa7c8170dfc99b705ac9bd93fd94",
     "89504e470d0a1a0a0000000d494844520000000b0000000301030000007f31670800000006504c54450a141e"
     "c8643277a0b39c000000114944415478da63509ac870e32cc36101000e12032c2ddb119b0000000049454e44"
     "ae426082"},
    {"palette 4-bit", "P", 5, 4, 20,
     "0fe904485fa94a8624f7438604eb941ba8ad6f4f37499056fab91b55a1c5f3db",
     "89504e470d0a1a0a0000000d4948445200000005000000040403000000b41de87300000030504c5445000102"
     "030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e"
     "2fad978eef000000184944415478da63509a7883e1ec61010647b93a8643c515002e8605b67305ad4f000000"
     "0049454e44ae426082"},
    {"palette 8-bit with tRNS", "P", 6, 3, 18,
     "dd137868c8d598158efe12573f38d4663fb4a18d391f766c8513ed26e7106eb6",
     "89504e470d0a1a0a0000000d494844520000000600000003080300000087df8ec900000030504c5445000102"
     "030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e"
     "2fad978eef0000000274524e5300809b2b4e180000001d4944415478da636062e4e065666060e4e36362e660"
     "6063e464e5e001000423006f7c252ddf0000000049454e44ae426082"},
    {"RGB 8-bit with tRNS", "RGB", 3, 3, 27,
     "75b0c732d426b8afaaa6e8e76ffc2a661f14babfc9dde0eb1316dd4af2768bec",
     "89504e470d0a1a0a0000000d4948445200000003000000030802000000d94a22e80000000674524e53000100"
     "020003c94babf5000000274944415478da63509a78e3ec610147b93a8643c515cb124f9a4ad430b03fb99a9c"
     "37fbf0110600c1470d02b1b48ba50000000049454e44ae426082"},
    {"gray 8-bit with tRNS", "L", 4, 4, 16,
     "c1b61382f1f6aae7cc6b3266eaf05c81581f295548a63d3dc9f0e7944ceb7a43",
     "89504e470d0a1a0a0000000d49484452000000040000000408000000008c9ac1a20000000274524e5300106b"
     "24dd5c0000001d4944415478da63509a78e32cc36101473986ba43c5150ccb124f9a02004db907bb81720883"
     "0000000049454e44ae426082"},
    {"gray 1-bit, interlaced", "1", 13, 11, 22,
     "b023f10a48d4763ef2785e40d3bd80d942eff280381dd5477e46213ae8fb2ce4",
     "89504e470d0a1a0a0000000d494844520000000d0000000b0100000001fbce0a5a000000364944415478da63"
     "70600081030c09407c8041816102c3158616061686290c2f1834187c187e30dc38c1e028c1505cc170d28081"
     "fd010010260c992e2922140000000049454e44ae426082"},
    {"palette 2-bit, interlaced", "P", 11, 9, 99,
     "257b02483941649923257a29558a1c29ca5fe479a5434c863bc94d6c1317040d",
     "89504e470d0a1a0a0000000d494844520000000b000000090203000001ee0d0e280000000c504c5445000000"
     "ff000000ff000000ff9bc013dc0000003c4944415478da63306038c0d000c4731838183c1804189c0b18642f"
     "302c7560103bc0b09281c1c281c18081e1ec61018643c5150ca612350cc9793300470a0d586a00d0a2000000"
     "0049454e44ae426082"},
    {"gray 16-bit, interlaced", "I", 9, 9, 324,
     "49d9bc7d5de3ed54900fa927248fcf802d805374f301a66584d23c7b9cc5f72d",
     "89504e470d0a1a0a0000000d4948445200000009000000091000000001e26db519000000c04944415478da01"
     "b5004aff002291187c000b4ec533007ec20064a500d6eafeb9b8f900c310a66100a4191ebe00fb9d803a00e6"
     "5106a6f0e137f80787008164087acc672c5db3c600d8cd411e7378c9350007058a0261af6cb9008eec2fa1dc"
     "4b55e50096da3ebe6aaa8ce100b4d997942b2bfb030007e4d5636e9bc3c400b27244b8cd3a97f11a0038c370"
     "f07e8d3b583bad38c275f34aed056a00b680eff76c81d4e9ab304d4896f9e17fd8f000acbc5f1670a9821bc7"
     "2985d7645e7dbb0778a51854e41118aa900000000049454e44ae426082"},
    {"gray+alpha 8-bit, interlaced", "LA", 3, 9, 54,
     "b95ce339724685ba3e2f9e3cb5e148302bf24082156e186a72a53ac24e79dea0",
     "89504e470d0a1a0a0000000d49484452000000030000000908040000012abd6ec4000000524944415478da01"
     "4700b8ff0022910037f800c3c400c31000724400078700a661187c00e65106a600d8cd00c9350000b2000705"
     "006cb900411e7ec273780007e4d5636e9b00b8cd3a97f11a008a02f0e161af4b201a09a25aa80a0000000049"
     "454e44ae426082"},
};

TEST(PngCodecTest, DecodeMatchesPillowForEveryFlavour) {
  for (const PngPillowCase& c : kPngPillowCases) {
    SCOPED_TRACE(c.what);
    const std::string png = FromHex(c.png_hex);
    Result<PilImage> image = DecodePng(png);
    ASSERT_TRUE(image.has_value()) << image.error().ToString();
    EXPECT_EQ(image->mode, c.mode);
    EXPECT_EQ(image->width, c.width);
    EXPECT_EQ(image->height, c.height);
    EXPECT_EQ(image->pixels.size(), c.pixel_bytes);
    EXPECT_EQ(Sha256Hex(image->pixels), c.pixels_sha256);

    Result<ImageInfo> info = ProbePng(png);
    ASSERT_TRUE(info.has_value()) << info.error().ToString();
    EXPECT_EQ(*info, (ImageInfo{c.width, c.height, c.mode}));
  }
}

// ---------------------------------------------------------------------------------------------
// A PNG writer from the spec, independent of libpng.

constexpr int kGray = 0, kRgb = 2, kPalette = 3, kGrayAlpha = 4, kRgba = 6;

int ChannelsOf(int color_type) {
  switch (color_type) {
    case kRgb:
      return 3;
    case kGrayAlpha:
      return 2;
    case kRgba:
      return 4;
    default:
      return 1;
  }
}

struct ReferencePng {
  uint32_t width = 0;
  uint32_t height = 0;
  int bit_depth = 8;
  int color_type = kGray;
  bool interlaced = false;
  std::vector<uint16_t> samples;  // width * height * channels, rows top to bottom, interleaved
  std::string palette;            // PLTE payload (3 bytes an entry), for kPalette
  std::string transparency;       // tRNS payload, if any
  bool dirty_padding = false;     // set the unused bits at the end of each packed row
  bool write_iend = true;
};

void AppendU32BE(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

std::string Chunk(std::string_view type, std::string_view payload) {
  std::string out;
  AppendU32BE(out, static_cast<uint32_t>(payload.size()));
  out += type;
  out += payload;
  uLong crc = crc32(0, reinterpret_cast<const Bytef*>(type.data()), type.size());
  crc = crc32(crc, reinterpret_cast<const Bytef*>(payload.data()), payload.size());
  AppendU32BE(out, static_cast<uint32_t>(crc));
  return out;
}

// One (sub-)image row: the samples of columns `xs` of row `y`, packed at the bit depth.
std::string PackRow(const ReferencePng& png, const std::vector<uint32_t>& xs, uint32_t y) {
  const int channels = ChannelsOf(png.color_type);
  std::string row;
  uint32_t acc = 0;
  int bits = 0;
  for (uint32_t x : xs) {
    for (int c = 0; c < channels; ++c) {
      const uint16_t v = png.samples[(size_t{y} * png.width + x) * channels + c];
      if (png.bit_depth == 16) {
        row += static_cast<char>(v >> 8);
        row += static_cast<char>(v & 0xFF);
      } else if (png.bit_depth == 8) {
        row += static_cast<char>(v);
      } else {
        acc = (acc << png.bit_depth) | v;
        bits += png.bit_depth;
        if (bits == 8) {
          row += static_cast<char>(acc);
          acc = 0;
          bits = 0;
        }
      }
    }
  }
  if (bits > 0) {
    const int pad = 8 - bits;
    acc <<= pad;
    if (png.dirty_padding) acc |= (1u << pad) - 1;
    row += static_cast<char>(acc);
  }
  return row;
}

// The IDAT stream before compression: filter byte 0 (None) plus the packed row, per pass.
std::string RawImageData(const ReferencePng& png) {
  struct Pass {
    uint32_t x0, y0, dx, dy;
  };
  static constexpr Pass kAdam7[] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                    {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  static constexpr Pass kWhole[] = {{0, 0, 1, 1}};
  std::string raw;
  for (const Pass& pass :
       png.interlaced ? std::span<const Pass>(kAdam7) : std::span<const Pass>(kWhole)) {
    std::vector<uint32_t> xs;
    for (uint32_t x = pass.x0; x < png.width; x += pass.dx) xs.push_back(x);
    if (xs.empty()) continue;  // an empty pass has no rows at all, not even filter bytes
    for (uint32_t y = pass.y0; y < png.height; y += pass.dy) {
      raw += '\0';
      raw += PackRow(png, xs, y);
    }
  }
  return raw;
}

std::string Compress(std::string_view raw) {
  uLongf size = compressBound(raw.size());
  std::string out(size, '\0');
  EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                      reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 9),
            Z_OK);
  out.resize(size);
  return out;
}

std::string Ihdr(uint32_t width, uint32_t height, int bit_depth, int color_type, bool interlaced) {
  std::string ihdr;
  AppendU32BE(ihdr, width);
  AppendU32BE(ihdr, height);
  ihdr += static_cast<char>(bit_depth);
  ihdr += static_cast<char>(color_type);
  ihdr += '\0';  // compression
  ihdr += '\0';  // filter method
  ihdr += static_cast<char>(interlaced ? 1 : 0);
  return Chunk("IHDR", ihdr);
}

constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);

std::string BuildPng(const ReferencePng& png) {
  std::string out(kSignature);
  out += Ihdr(png.width, png.height, png.bit_depth, png.color_type, png.interlaced);
  if (!png.palette.empty()) out += Chunk("PLTE", png.palette);
  if (!png.transparency.empty()) out += Chunk("tRNS", png.transparency);
  out += Chunk("IDAT", Compress(RawImageData(png)));
  if (png.write_iend) out += Chunk("IEND", "");
  return out;
}

// Random samples that fit the bit depth (and the palette), from a fixed seed.
ReferencePng RandomPng(uint32_t width, uint32_t height, int bit_depth, int color_type,
                       bool interlaced, uint32_t seed) {
  ReferencePng png;
  png.width = width;
  png.height = height;
  png.bit_depth = bit_depth;
  png.color_type = color_type;
  png.interlaced = interlaced;
  std::mt19937 rng(seed);
  uint32_t limit = 1u << bit_depth;
  if (color_type == kPalette) {
    const uint32_t entries = std::min<uint32_t>(limit, 5);  // fewer entries than indices
    for (uint32_t i = 0; i < 3 * entries; ++i) png.palette += static_cast<char>(rng() & 0xFF);
    limit = entries;
  }
  png.samples.resize(size_t{width} * height * ChannelsOf(color_type));
  for (uint16_t& s : png.samples) s = static_cast<uint16_t>(rng() % limit);
  png.dirty_padding = true;
  return png;
}

// What Pillow 9.4's tobytes() gives for `png`, from the rules documented in png_codec.h.
PilImage PilPixels(const ReferencePng& png) {
  PilImage image;
  image.width = png.width;
  image.height = png.height;
  const int channels = ChannelsOf(png.color_type);
  const bool wide = png.bit_depth == 16;
  auto sample = [&](size_t pixel, int c) { return png.samples[pixel * channels + c]; };
  auto high = [&](size_t pixel, int c) {
    return static_cast<char>(wide ? sample(pixel, c) >> 8 : sample(pixel, c));
  };
  const size_t pixels = size_t{png.width} * png.height;
  switch (png.color_type) {
    case kGray:
      if (png.bit_depth == 1) {
        image.mode = "1";
        for (uint32_t y = 0; y < png.height; ++y) {
          std::string row((png.width + 7) / 8, '\0');
          for (uint32_t x = 0; x < png.width; ++x) {
            if (sample(size_t{y} * png.width + x, 0) != 0) row[x / 8] |= 0x80 >> (x % 8);
          }
          image.pixels += row;
        }
      } else if (wide) {
        image.mode = "I";
        for (size_t i = 0; i < pixels; ++i) {
          const uint16_t v = sample(i, 0);
          image.pixels += {static_cast<char>(v & 0xFF), static_cast<char>(v >> 8), 0, 0};
        }
      } else {
        image.mode = "L";
        const int scale = png.bit_depth == 2 ? 85 : png.bit_depth == 4 ? 17 : 1;
        for (size_t i = 0; i < pixels; ++i) image.pixels += static_cast<char>(sample(i, 0) * scale);
      }
      break;
    case kGrayAlpha:
      image.mode = wide ? "RGBA" : "LA";
      for (size_t i = 0; i < pixels; ++i) {
        if (wide) image.pixels += {high(i, 0), high(i, 0)};
        image.pixels += {high(i, 0), high(i, 1)};
      }
      break;
    case kPalette:
      image.mode = "P";
      for (size_t i = 0; i < pixels; ++i) image.pixels += static_cast<char>(sample(i, 0));
      break;
    default:
      image.mode = channels == 3 ? "RGB" : "RGBA";
      for (size_t i = 0; i < pixels; ++i) {
        for (int c = 0; c < channels; ++c) image.pixels += high(i, c);
      }
  }
  return image;
}

struct Flavour {
  int color_type;
  int bit_depth;
};

// Every combination the PNG spec allows.
constexpr Flavour kAllFlavours[] = {
    {kGray, 1},    {kGray, 2},      {kGray, 4},       {kGray, 8},    {kGray, 16},
    {kRgb, 8},     {kRgb, 16},      {kPalette, 1},    {kPalette, 2}, {kPalette, 4},
    {kPalette, 8}, {kGrayAlpha, 8}, {kGrayAlpha, 16}, {kRgba, 8},    {kRgba, 16},
};

TEST(PngCodecTest, DecodeFollowsPillowRulesForEveryFlavourSizeAndInterlace) {
  struct Size {
    uint32_t width, height;
  };
  // 1x1 leaves six of the seven Adam7 passes empty; 13x11 fills all of them with ragged edges.
  constexpr Size kSizes[] = {{1, 1}, {3, 2}, {13, 11}, {33, 5}};
  uint32_t seed = 1;
  for (const Flavour& f : kAllFlavours) {
    for (const Size& size : kSizes) {
      for (bool interlaced : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "colour type " << f.color_type << ", " << f.bit_depth << "-bit, "
                     << size.width << "x" << size.height << (interlaced ? ", interlaced" : ""));
        const ReferencePng png =
            RandomPng(size.width, size.height, f.bit_depth, f.color_type, interlaced, seed++);
        const std::string file = BuildPng(png);
        Result<PilImage> image = DecodePng(file);
        ASSERT_TRUE(image.has_value()) << image.error().ToString();
        EXPECT_EQ(*image, PilPixels(png));
        Result<ImageInfo> info = ProbePng(file);
        ASSERT_TRUE(info.has_value()) << info.error().ToString();
        EXPECT_EQ(*info, (ImageInfo{image->width, image->height, image->mode}));
      }
    }
  }
}

TEST(PngCodecTest, TransparencyChunkChangesNeitherModeNorPixels) {
  ReferencePng gray = RandomPng(7, 3, 8, kGray, false, 11);
  gray.transparency = std::string("\x00\x10", 2);
  ReferencePng rgb = RandomPng(7, 3, 16, kRgb, false, 12);
  rgb.transparency = std::string("\x00\x01\x00\x02\x00\x03", 6);
  ReferencePng palette = RandomPng(7, 3, 4, kPalette, true, 13);
  palette.transparency = std::string("\x00\x80\xff", 3);
  for (const ReferencePng* png : {&gray, &rgb, &palette}) {
    Result<PilImage> image = DecodePng(BuildPng(*png));
    ASSERT_TRUE(image.has_value()) << image.error().ToString();
    EXPECT_EQ(*image, PilPixels(*png));
  }
}

TEST(PngCodecTest, MissingIendIsTolerated) {
  ReferencePng png = RandomPng(9, 4, 8, kRgb, false, 21);
  png.write_iend = false;
  Result<PilImage> image = DecodePng(BuildPng(png));
  ASSERT_TRUE(image.has_value()) << image.error().ToString();
  EXPECT_EQ(*image, PilPixels(png));
}

// ---------------------------------------------------------------------------------------------
// EncodePng.

TEST(PngCodecTest, EncodeRoundTripsEveryModeAndLevel) {
  for (const char* mode : {"L", "LA", "RGB", "RGBA"}) {
    for (auto [w, h] : {std::pair<uint32_t, uint32_t>{1, 1}, {3, 2}, {31, 17}, {256, 3}}) {
      for (int level : {0, 6, 9}) {
        SCOPED_TRACE(testing::Message() << mode << " " << w << "x" << h << " level " << level);
        const PilImage original = PatternImage(mode, w, h);
        Result<std::string> png = EncodePng(original, level);
        ASSERT_TRUE(png.has_value()) << png.error().ToString();
        EXPECT_TRUE(png->starts_with(kSignature));
        Result<PilImage> decoded = DecodePng(*png);
        ASSERT_TRUE(decoded.has_value()) << decoded.error().ToString();
        EXPECT_EQ(*decoded, original);
      }
    }
  }
}

TEST(PngCodecTest, EncodeDefaultsToLevelSix) {
  const PilImage image = PatternImage("RGB", 64, 64);
  Result<std::string> by_default = EncodePng(image);
  Result<std::string> level6 = EncodePng(image, 6);
  Result<std::string> stored = EncodePng(image, 0);
  ASSERT_TRUE(by_default.has_value() && level6.has_value() && stored.has_value());
  EXPECT_EQ(*by_default, *level6);
  EXPECT_LT(level6->size(), stored->size());
}

TEST(PngCodecTest, EncodeRejectsBadArguments) {
  const PilImage good = PatternImage("RGB", 4, 3);
  PilImage palette = good;
  palette.mode = "P";
  PilImage short_pixels = good;
  short_pixels.pixels.pop_back();
  PilImage empty{0, 3, "RGB", ""};
  for (const PilImage* image : {&palette, &short_pixels, &empty}) {
    Result<std::string> png = EncodePng(*image);
    ASSERT_FALSE(png.has_value());
    EXPECT_EQ(png.error().code(), StatusCode::kInvalidArgument) << png.error().ToString();
  }
  EXPECT_EQ(EncodePng(good, -1).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodePng(good, 10).error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(EncodePng(palette).error().message(), HasSubstr("'P'"));
}

// ---------------------------------------------------------------------------------------------
// Corrupt input: always a Status, never a crash (the dev build runs this under ASan and UBSan).

void ExpectDataLoss(std::string_view data, std::string_view what) {
  SCOPED_TRACE(what);
  Result<PilImage> image = DecodePng(data);
  ASSERT_FALSE(image.has_value());
  EXPECT_EQ(image.error().code(), StatusCode::kDataLoss) << image.error().ToString();
}

TEST(PngCodecTest, GarbageIsDataLoss) {
  ExpectDataLoss("", "empty");
  ExpectDataLoss("hello, world", "text");
  ExpectDataLoss(kSignature, "signature only");
  ExpectDataLoss(std::string(kSignature) + std::string(100, '\xAB'), "signature then junk");
  ExpectDataLoss(std::string("\xff\xd8\xff\xe0", 4) + std::string(60, '\0'), "a JPEG start");
  EXPECT_THAT(DecodePng("hello").error().message(), HasSubstr("not a PNG"));
  EXPECT_EQ(ProbePng("hello").error().code(), StatusCode::kDataLoss);
}

TEST(PngCodecTest, EveryTruncationIsDataLoss) {
  const std::string file = BuildPng(RandomPng(13, 11, 8, kRgb, true, 31));
  // The last 12 bytes are IEND, which the decoder does not need (see MissingIendIsTolerated).
  const size_t image_end = file.size() - 12;
  for (size_t n = 0; n < image_end; ++n) {
    Result<PilImage> image = DecodePng(std::string_view(file).substr(0, n));
    ASSERT_FALSE(image.has_value()) << "prefix of " << n << " bytes decoded";
    EXPECT_EQ(image.error().code(), StatusCode::kDataLoss) << image.error().ToString();
  }
  EXPECT_TRUE(DecodePng(std::string_view(file).substr(0, image_end)).has_value());
}

TEST(PngCodecTest, ChecksumMismatchInImageDataIsDataLoss) {
  std::string file = BuildPng(RandomPng(8, 8, 8, kGray, false, 41));
  file[file.size() - 12 - 1] ^= 0x01;  // last byte of the IDAT CRC
  Result<PilImage> image = DecodePng(file);
  ASSERT_FALSE(image.has_value());
  EXPECT_EQ(image.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(image.error().message(), HasSubstr("CRC"));
}

TEST(PngCodecTest, BadCompressedDataIsDataLossButProbeSucceeds) {
  std::string file(kSignature);
  file += Ihdr(16, 16, 8, kRgb, false);
  file += Chunk("IDAT", std::string(200, '\x5A'));  // a valid chunk of invalid zlib
  file += Chunk("IEND", "");
  Result<ImageInfo> info = ProbePng(file);
  ASSERT_TRUE(info.has_value()) << info.error().ToString();
  EXPECT_EQ(*info, (ImageInfo{16, 16, "RGB"}));
  ExpectDataLoss(file, "invalid zlib stream");
}

TEST(PngCodecTest, TooLittleImageDataIsDataLoss) {
  ReferencePng png = RandomPng(6, 6, 8, kGray, false, 51);
  std::string raw = RawImageData(png);
  raw.resize(raw.size() / 2);
  std::string file(kSignature);
  file += Ihdr(6, 6, 8, kGray, false);
  file += Chunk("IDAT", Compress(raw));
  file += Chunk("IEND", "");
  ExpectDataLoss(file, "half the rows");
}

TEST(PngCodecTest, EveryByteFlipIsAStatusNotACrash) {
  const std::string file = BuildPng(RandomPng(5, 4, 2, kPalette, true, 61));
  for (size_t i = 0; i < file.size(); ++i) {
    for (unsigned mask : {0x01u, 0x80u, 0xFFu}) {
      std::string corrupt = file;
      corrupt[i] = static_cast<char>(corrupt[i] ^ mask);
      Result<PilImage> image = DecodePng(corrupt);
      if (image.has_value()) {
        EXPECT_EQ(image->pixels.size(), size_t{image->width} * image->height) << i;
      } else {
        EXPECT_EQ(image.error().code(), StatusCode::kDataLoss) << image.error().ToString();
      }
    }
  }
}

TEST(PngCodecTest, HugeDeclaredSizesAreRefusedBeforeAllocating) {
  // 20000 x 20000 = 400M pixels: above Pillow's decompression-bomb limit.
  std::string bomb(kSignature);
  bomb += Ihdr(20000, 20000, 8, kGray, false);
  bomb += Chunk("IDAT", Compress(std::string(100, '\0')));
  Result<PilImage> image = DecodePng(bomb);
  ASSERT_FALSE(image.has_value());
  EXPECT_EQ(image.error().code(), StatusCode::kResourceExhausted) << image.error().ToString();
  EXPECT_EQ(ProbePng(bomb).error().code(), StatusCode::kResourceExhausted);

  // 8000 x 8000 RGBA16 is under the pixel limit but needs 512 MB of image data that a file of
  // about a hundred bytes cannot inflate to.
  std::string liar(kSignature);
  liar += Ihdr(8000, 8000, 16, kRgba, false);
  liar += Chunk("IDAT", Compress(std::string(100, '\0')));
  image = DecodePng(liar);
  ASSERT_FALSE(image.has_value());
  EXPECT_EQ(image.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(image.error().message(), HasSubstr("inflate"));
}

}  // namespace
}  // namespace ferry
