// Tests for the synthetic ImageNet-like JPEGs: the generator is pinned, every output is a pure
// function of (seed, index, mean size), and the files look like what they claim to be.
#include "data/synthetic_images.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <utility>

#include "image/jpeg_codec.h"

namespace ferry::bench {
namespace {

TEST(SyntheticImagesTest, GeneratorsMatchTheirReferenceOutputs) {
  // SplitMix64 and xoshiro256** as published (values computed with an independent script); a
  // change here would silently change every generated data set.
  uint64_t state = 0;
  EXPECT_EQ(SplitMix64(state), 0xe220a8397b1dcdafull);
  Rng zero(0);
  EXPECT_EQ(zero.Next(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(zero.Next(), 0xbf6e1f784956452aull);
  EXPECT_EQ(zero.Next(), 0x1a5f849d4933e6e0ull);
  Rng answer(42);
  EXPECT_EQ(answer.Next(), 0x15780b2e0c2ec716ull);
}

TEST(SyntheticImagesTest, RngHelpersStayInRange) {
  Rng rng(7);
  for (int i = 0; i < 10000; ++i) {
    const double u = rng.Uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_LT(rng.Below(11), 11u);
  }
}

TEST(SyntheticImagesTest, SpecsAreDeterministicAndImageNetLike) {
  std::set<std::pair<uint32_t, uint32_t>> shapes;
  for (uint64_t i = 0; i < 500; ++i) {
    const SyntheticSpec spec = SpecFor(3, i, 110);
    const SyntheticSpec again = SpecFor(3, i, 110);
    EXPECT_EQ(spec.width, again.width);
    EXPECT_EQ(spec.height, again.height);
    EXPECT_EQ(spec.quality, again.quality);
    EXPECT_EQ(spec.target_bytes, again.target_bytes);
    EXPECT_GE(spec.quality, 85);
    EXPECT_LE(spec.quality, 95);
    EXPECT_GT(spec.target_bytes, 0);
    shapes.insert({spec.width, spec.height});
  }
  EXPECT_TRUE(shapes.contains({500, 375}));
  EXPECT_TRUE(shapes.contains({375, 500}));
  EXPECT_TRUE(shapes.contains({500, 333}));
  EXPECT_TRUE(shapes.contains({640, 480}));
}

TEST(SyntheticImagesTest, PixelsArePureFunctionsOfSeedAndIndex) {
  const PilImage a = SynthesizePixels(1, 5, 120, 80, 1.0);
  EXPECT_EQ(a.mode, "RGB");
  EXPECT_EQ(a.pixels.size(), size_t{120} * 80 * 3);
  EXPECT_EQ(SynthesizePixels(1, 5, 120, 80, 1.0), a);
  EXPECT_NE(SynthesizePixels(1, 6, 120, 80, 1.0), a);
  EXPECT_NE(SynthesizePixels(2, 5, 120, 80, 1.0), a);
}

TEST(SyntheticImagesTest, MoreDetailMeansLargerFiles) {
  size_t previous = 0;
  for (double detail : {0.0, 1.0, 4.0}) {
    Result<std::string> jpeg = EncodeJpeg(SynthesizePixels(9, 0, 200, 150, detail), 90);
    ASSERT_TRUE(jpeg.has_value()) << jpeg.error().ToString();
    EXPECT_GT(jpeg->size(), previous) << "detail " << detail;
    previous = jpeg->size();
  }
}

TEST(SyntheticImagesTest, JpegsAreDeterministicDecodableAndNearTheMean) {
  constexpr int kImages = 40;
  double total = 0;
  for (uint64_t i = 0; i < kImages; ++i) {
    Result<std::string> jpeg = MakeSyntheticJpeg(11, i, 110);
    ASSERT_TRUE(jpeg.has_value()) << jpeg.error().ToString();
    total += static_cast<double>(jpeg->size());
    if (i < 3) {
      EXPECT_EQ(*MakeSyntheticJpeg(11, i, 110), *jpeg);
      const SyntheticSpec spec = SpecFor(11, i, 110);
      Result<ImageInfo> info = ProbeJpeg(*jpeg);
      ASSERT_TRUE(info.has_value()) << info.error().ToString();
      EXPECT_EQ(*info, (ImageInfo{spec.width, spec.height, "RGB"}));
    }
  }
  // File sizes spread widely (their coefficient of variation is about 0.6), so 40 files only
  // pin the mean to within about +-30%; the generator's own runs check it to a few percent.
  const double mean_kb = total / kImages / 1024;
  EXPECT_GT(mean_kb, 110 * 0.7);
  EXPECT_LT(mean_kb, 110 * 1.3);
}

}  // namespace
}  // namespace ferry::bench
