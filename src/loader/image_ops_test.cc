// Pixel operations: the properties that hold whatever the reference. Pixel equality with Pillow
// itself is checked from Python (tests/python/test_loader.py), where Pillow is at hand.
#include "loader/image_ops.h"

#include <gtest/gtest.h>

#include "image/jpeg_codec.h"
#include "loader/image_pipeline.h"

namespace ferry::internal_loader {
namespace {

RgbImage Pattern(uint32_t w, uint32_t h) {
  RgbImage image{w, h, std::vector<uint8_t>(size_t{w} * h * 3)};
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      uint8_t* p = image.row(y) + x * 3;
      p[0] = static_cast<uint8_t>(x * 7 + y);
      p[1] = static_cast<uint8_t>(y * 11);
      p[2] = static_cast<uint8_t>((x ^ y) * 5);
    }
  }
  return image;
}

TEST(Resize, ToTheSameSizeIsTheImage) {
  const RgbImage image = Pattern(13, 9);
  EXPECT_EQ(Resize(image, 13, 9).pixels, image.pixels);
}

TEST(Resize, AConstantImageStaysConstantAtAnySize) {
  RgbImage image{40, 30, std::vector<uint8_t>(40 * 30 * 3, 77)};
  for (auto [w, h] : {std::pair{7u, 5u}, {40u, 3u}, {99u, 61u}, {1u, 1u}}) {
    const RgbImage out = Resize(image, w, h);
    ASSERT_EQ(out.width, w);
    ASSERT_EQ(out.height, h);
    for (uint8_t v : out.pixels) ASSERT_EQ(v, 77);
  }
}

TEST(Resize, HalvingAveragesNeighbours) {
  // A row alternating 0 and 200 halves to about its mean everywhere but the edges.
  RgbImage image{16, 2, std::vector<uint8_t>(16 * 2 * 3)};
  for (uint32_t x = 0; x < 16; ++x) {
    for (uint32_t y = 0; y < 2; ++y) std::fill_n(image.row(y) + x * 3, 3, x % 2 ? 200 : 0);
  }
  const RgbImage out = Resize(image, 8, 2);
  for (uint32_t x = 1; x < 7; ++x) EXPECT_NEAR(out.row(0)[x * 3], 100, 15) << x;
}

TEST(Crop, InsideCopiesOutsideIsBlack) {
  const RgbImage image = Pattern(5, 4);
  const RgbImage inside = Crop(image, 1, 1, 3, 2);
  EXPECT_EQ(inside.row(0)[0], image.row(1)[3]);
  EXPECT_EQ(inside.row(1)[8], image.row(2)[3 * 3 + 2]);
  const RgbImage padded = Crop(image, -2, -1, 9, 6);
  EXPECT_EQ(padded.row(0)[5], 0);  // above the image
  EXPECT_EQ(padded.row(1)[2 * 3], image.row(0)[0]);
  EXPECT_EQ(padded.row(5)[8 * 3], 0);  // below and right
}

TEST(FlipHorizontal, MirrorsRowsAndTwiceIsIdentity) {
  const RgbImage image = Pattern(6, 3);
  RgbImage flipped = image;
  FlipHorizontal(flipped);
  EXPECT_EQ(flipped.row(2)[0], image.row(2)[5 * 3]);
  FlipHorizontal(flipped);
  EXPECT_EQ(flipped.pixels, image.pixels);
}

TEST(ToRgb, ConvertsAsPillowDoes) {
  auto rgb = ToRgb({.width = 1, .height = 2, .mode = "L", .pixels = std::string("\x05\xfa", 2)});
  ASSERT_TRUE(rgb.has_value());
  EXPECT_EQ(rgb->pixels, (std::vector<uint8_t>{5, 5, 5, 250, 250, 250}));
  auto rgba = ToRgb({.width = 1, .height = 1, .mode = "RGBA", .pixels = "abcd"});
  EXPECT_EQ(rgba->pixels, (std::vector<uint8_t>{'a', 'b', 'c'}));
  // CMYK (10, 20, 30, 40) -> 255 - min(255, c + k) per channel.
  auto cmyk = ToRgb(
      {.width = 1, .height = 1, .mode = "CMYK", .pixels = std::string("\x0a\x14\x1e\x28", 4)});
  EXPECT_EQ(cmyk->pixels, (std::vector<uint8_t>{205, 195, 185}));
  EXPECT_EQ(ToRgb({.width = 1, .height = 1, .mode = "P", .pixels = "a"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ToRgb({.width = 2, .height = 1, .mode = "RGB", .pixels = "abc"}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ImagePipeline, NeedsAFixedOutputSize) {
  using Kind = ImageTransform::Kind;
  EXPECT_EQ(
      ImagePipeline::Create({.transforms = {{.kind = Kind::kResize, .width = 32}}}).status().code(),
      StatusCode::kInvalidArgument);
  auto p =
      ImagePipeline::Create({.transforms = {{.kind = Kind::kResize, .width = 32},
                                            {.kind = Kind::kCenterCrop, .width = 24, .height = 16}},
                             .to_float = true,
                             .channels_first = true});
  ASSERT_TRUE(p.has_value()) << p.status().ToString();
  EXPECT_EQ(p->out_width(), 24u);
  EXPECT_EQ(p->out_bytes(), 24u * 16 * 3 * 4);
  EXPECT_FALSE(
      ImagePipeline::Create({.transforms = {{.kind = Kind::kCenterCrop, .width = 4, .height = 4}},
                             .mean = std::array<float, 3>{0.5f, 0.5f, 0.5f}})
          .has_value());  // Normalize needs float output
}

TEST(ImagePipeline, RandomTransformsDependOnlyOnSeedEpochAndSample) {
  using Kind = ImageTransform::Kind;
  auto p = ImagePipeline::Create(
               {.transforms = {{.kind = Kind::kRandomResizedCrop, .width = 8, .height = 8},
                               {.kind = Kind::kRandomHorizontalFlip}}})
               .value();
  const RgbImage image = Pattern(50, 40);
  auto run = [&](uint64_t seed, uint64_t epoch, uint64_t sample) {
    SampleRng rng(seed, epoch, sample);
    return p.Transform(image, rng).value().pixels;
  };
  EXPECT_EQ(run(1, 2, 3), run(1, 2, 3));
  EXPECT_NE(run(1, 2, 3), run(1, 2, 4));
  EXPECT_NE(run(1, 2, 3), run(1, 3, 3));
  EXPECT_NE(run(1, 2, 3), run(2, 2, 3));
  SampleRng rng(0, 0, 0);
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = rng.Integer(3, 7);
    ASSERT_TRUE(v >= 3 && v < 7);
    const double u = rng.Uniform(0.25, 0.5);
    ASSERT_TRUE(u >= 0.25 && u < 0.5);
  }
}

TEST(ImagePipeline, CroppingWhileDecodingGivesTheCropOfTheFullDecode) {
  using Kind = ImageTransform::Kind;
  PilImage source{.width = 123, .height = 77, .mode = "RGB", .pixels = {}};
  for (uint32_t i = 0; i < source.width * source.height; ++i) {
    source.pixels += static_cast<char>(i % 256);
    source.pixels += static_cast<char>((i / 123) * 3);
    source.pixels += static_cast<char>((i * 7) % 251);
  }
  const std::string jpeg = EncodeJpeg(source, 90).value();
  auto pipeline = ImagePipeline::Create(
                      {.transforms = {{.kind = Kind::kRandomResizedCrop, .width = 24, .height = 20},
                                      {.kind = Kind::kRandomHorizontalFlip}},
                       .dct_scaling = false})
                      .value();
  const RgbImage full = ToRgb(DecodeJpeg(jpeg).value()).value();
  for (uint64_t sample = 0; sample < 30; ++sample) {
    std::vector<uint8_t> got(pipeline.out_bytes());
    SampleRng a(3, 1, sample), b(3, 1, sample);
    ASSERT_TRUE(pipeline.Apply(jpeg, a, got.data()).ok());
    EXPECT_EQ(got, pipeline.Transform(full, b).value().pixels) << "sample " << sample;
  }
}

}  // namespace
}  // namespace ferry::internal_loader
