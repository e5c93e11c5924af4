// DecodeJpegRegion gives exactly the pixels of a full decode, cut to the region.
#include "image/jpeg_region.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "image/image_testutil.h"
#include "image/jpeg_codec.h"

namespace ferry {
namespace {

using ::ferry::internal_image_test::PatternImage;

PilImage Cut(const PilImage& image, JpegRegion r) {
  const size_t c = image.mode == "L" ? 1 : 3;
  PilImage out{.width = r.width, .height = r.height, .mode = image.mode, .pixels = {}};
  for (uint32_t y = r.y; y < r.y + r.height; ++y) {
    out.pixels += image.pixels.substr((size_t{y} * image.width + r.x) * c, size_t{r.width} * c);
  }
  return out;
}

TEST(DecodeJpegRegion, EqualsTheFullDecodeCutToTheRegion) {
  for (const char* mode : {"RGB", "L"}) {
    for (JpegSubsampling sub : {JpegSubsampling::k420, JpegSubsampling::k444}) {
      const std::string jpeg = EncodeJpeg(PatternImage(mode, 97, 61), 85, sub).value();
      for (int d : {1, 2}) {
        const PilImage full = DecodeJpeg(jpeg, d).value();
        for (JpegRegion r : {JpegRegion{0, 0, full.width, full.height}, JpegRegion{5, 3, 20, 17},
                             JpegRegion{full.width - 9, full.height - 4, 9, 4},
                             JpegRegion{17, 0, 1, full.height}, JpegRegion{0, 9, full.width, 1}}) {
          SCOPED_TRACE(testing::Message() << mode << " 1/" << d << " region " << r.x << "," << r.y
                                          << " " << r.width << "x" << r.height);
          auto got = DecodeJpegRegion(jpeg, r, d);
          ASSERT_TRUE(got.has_value()) << got.status().ToString();
          EXPECT_EQ(got->mode, mode);
          EXPECT_EQ(got->pixels, Cut(full, r).pixels);
        }
      }
    }
  }
}

TEST(DecodeJpegRegion, ManyRandomRegionsOfALargerImage) {
  const std::string jpeg = EncodeJpeg(PatternImage("RGB", 257, 131), 80).value();
  for (int d : {1, 2, 4}) {
    const PilImage full = DecodeJpeg(jpeg, d).value();
    uint64_t state = 12345 + d;
    auto next = [&](uint32_t n) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<uint32_t>((state >> 33) % n);
    };
    for (int i = 0; i < 40; ++i) {
      JpegRegion r;
      r.width = 1 + next(full.width);
      r.height = 1 + next(full.height);
      r.x = next(full.width - r.width + 1);
      r.y = next(full.height - r.height + 1);
      auto got = DecodeJpegRegion(jpeg, r, d);
      ASSERT_TRUE(got.has_value()) << got.status().ToString();
      ASSERT_EQ(got->pixels, Cut(full, r).pixels)
          << "1/" << d << " region " << r.x << "," << r.y << " " << r.width << "x" << r.height;
    }
  }
}

TEST(DecodeJpegRegion, BadRegionsAndDataAreClearErrors) {
  const std::string jpeg = EncodeJpeg(PatternImage("RGB", 40, 30), 85).value();
  EXPECT_EQ(DecodeJpegRegion(jpeg, {30, 0, 11, 5}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeJpegRegion(jpeg, {0, 0, 0, 5}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeJpegRegion(jpeg, {0, 0, 5, 5}, 3).status().code(), StatusCode::kInvalidArgument);
  auto truncated = DecodeJpegRegion(jpeg.substr(0, jpeg.size() / 2), {0, 20, 40, 10});
  EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(truncated.status().message(), ::testing::HasSubstr("Premature end"));
  EXPECT_EQ(DecodeJpegRegion("not a jpeg at all", {0, 0, 1, 1}).status().code(),
            StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ferry
