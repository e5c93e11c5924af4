#include "data/synthetic_images.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "image/jpeg_codec.h"

namespace ferry::bench {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
  for (uint64_t& s : s_) s = SplitMix64(seed);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

uint32_t Rng::Below(uint32_t n) { return static_cast<uint32_t>((Next() >> 32) * n >> 32); }

double Rng::Normal() {
  const double u1 = 1.0 - Uniform();  // (0, 1], so the log is finite
  const double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

namespace {

// One independent stream per (seed, index, purpose), so that the spec and the pixels of an
// image never depend on how many numbers another image or another purpose consumed.
uint64_t StreamSeed(uint64_t seed, uint64_t index, uint64_t purpose) {
  uint64_t state = seed;
  uint64_t mixed = SplitMix64(state);
  state = mixed ^ index;
  mixed = SplitMix64(state);
  state = mixed ^ purpose;
  return SplitMix64(state);
}

struct Shape {
  uint32_t width;
  uint32_t height;
  uint32_t weight;
};

// Common ImageNet (ILSVRC-2012) shapes, most with a 500-pixel long side. The weights are a rough
// guess at how often each occurs there, not a measurement.
constexpr std::array<Shape, 16> kShapes = {{
    {500, 375, 30},
    {375, 500, 12},
    {500, 333, 16},
    {333, 500, 5},
    {500, 500, 5},
    {640, 480, 6},
    {480, 640, 2},
    {500, 400, 5},
    {400, 500, 2},
    {400, 300, 4},
    {800, 600, 3},
    {1024, 768, 2},
    {300, 225, 2},
    {500, 281, 4},
    {350, 500, 2},
    {500, 356, 3},
}};

double MeanPixels() {
  double weighted = 0, total = 0;
  for (const Shape& s : kShapes) {
    weighted += static_cast<double>(s.weight) * s.width * s.height;
    total += s.weight;
  }
  return weighted / total;
}

// Measured mean bytes per pixel of SynthesizePixels + EncodeJpeg (quality 90, 4:2:0) against
// detail, over 100 images of 500x375 per point. Between points the curve is taken as linear.
// Image to image, the size at a given detail varies by about +-20% (p10..p90), which is spread
// we want; the mean is what the calibration must get right.
struct CalibrationPoint {
  double detail;
  double bytes_per_pixel;
};
constexpr std::array<CalibrationPoint, 10> kCalibration = {{
    {0.0, 0.081},
    {0.25, 0.131},
    {0.5, 0.185},
    {1.0, 0.282},
    {1.5, 0.381},
    {2.0, 0.456},
    {3.0, 0.566},
    {4.0, 0.627},
    {6.0, 0.727},
    {8.0, 0.806},  // saturated: full-range luminance noise is about 0.80 bytes/pixel at q90
}};

// Size relative to quality 90: measured x0.72..0.82 at 85 and x1.35..1.50 at 95.
double QualityFactor(int quality) { return std::exp(0.068 * (quality - 90)); }

// The expected bytes per pixel at `detail` and quality 90.
double CalibratedBytesPerPixel(double detail) {
  for (size_t i = 1; i < kCalibration.size(); ++i) {
    const CalibrationPoint& a = kCalibration[i - 1];
    const CalibrationPoint& b = kCalibration[i];
    if (detail <= b.detail || i + 1 == kCalibration.size()) {
      const double t = std::clamp((detail - a.detail) / (b.detail - a.detail), 0.0, 1.0);
      return a.bytes_per_pixel + t * (b.bytes_per_pixel - a.bytes_per_pixel);
    }
  }
  return kCalibration.back().bytes_per_pixel;
}

// The inverse: the detail whose expected size at quality 90 is `bytes_per_pixel`.
double CalibratedDetail(double bytes_per_pixel) {
  for (size_t i = 1; i < kCalibration.size(); ++i) {
    const CalibrationPoint& a = kCalibration[i - 1];
    const CalibrationPoint& b = kCalibration[i];
    if (bytes_per_pixel <= b.bytes_per_pixel || i + 1 == kCalibration.size()) {
      const double t = std::clamp(
          (bytes_per_pixel - a.bytes_per_pixel) / (b.bytes_per_pixel - a.bytes_per_pixel), 0.0,
          1.0);
      return a.detail + t * (b.detail - a.detail);
    }
  }
  return kCalibration.back().detail;
}

// The range of bytes per pixel the synthesis reaches on average at this quality.
double MinBytesPerPixel(int quality) {
  return kCalibration.front().bytes_per_pixel * QualityFactor(quality);
}
double MaxBytesPerPixel(int quality) {
  return 0.95 * kCalibration.back().bytes_per_pixel * QualityFactor(quality);
}

constexpr int kMinQuality = 85;
constexpr int kMaxQuality = 95;

// File sizes spread lognormally, as ImageNet's roughly do. Targets are drawn in bytes per pixel
// and clamped to what the image's quality can reach; the different shapes (67k to 786k pixels)
// add the rest of the spread, for about 30 KB at the 2nd and 300 KB at the 99th percentile
// around a 110 KB mean.
constexpr double kSizeSigma = 0.45;

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

// E[clamp(X, lo, hi)] for X = exp(N(mu, sigma^2)).
double ClampedLognormalMean(double mu, double sigma, double lo, double hi) {
  const double a = (std::log(lo) - mu) / sigma;
  const double b = (std::log(hi) - mu) / sigma;
  return lo * NormalCdf(a) + hi * (1 - NormalCdf(b)) +
         std::exp(mu + sigma * sigma / 2) * (NormalCdf(b - sigma) - NormalCdf(a - sigma));
}

// The mu of the lognormal whose clamped draws average `mean_bpp` over the qualities (which are
// uniform), so that clamping does not pull the mean file size off --mean-kb. Bisection: the
// clamped mean increases with mu.
double MuFor(double mean_bpp) {
  auto clamped_mean = [](double mu) {
    double sum = 0;
    for (int q = kMinQuality; q <= kMaxQuality; ++q) {
      sum += ClampedLognormalMean(mu, kSizeSigma, MinBytesPerPixel(q), MaxBytesPerPixel(q));
    }
    return sum / (kMaxQuality - kMinQuality + 1);
  };
  double lo = std::log(mean_bpp) - 5, hi = std::log(mean_bpp) + 5;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (clamped_mean(mid) < mean_bpp ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

struct Octave {
  double period;  // pixels between lattice points
  float amplitude;
};

// A random lattice `period` pixels apart, with values in [-amplitude, amplitude].
struct Lattice {
  Lattice() = default;
  Lattice(uint32_t width, uint32_t height, const Octave& octave, Rng& rng)
      : period(octave.period),
        inverse_period(1 / octave.period),
        grid_w(static_cast<uint32_t>(width / period) + 3),
        grid_h(static_cast<uint32_t>(height / period) + 3),
        values(size_t{grid_w} * grid_h) {
    for (float& v : values) v = static_cast<float>(rng.Uniform(-1.0, 1.0)) * octave.amplitude;
  }
  static float Smooth(double t) { return static_cast<float>(t * t * (3 - 2 * t)); }

  double period = 1;
  double inverse_period = 1;
  uint32_t grid_w = 0, grid_h = 0;
  std::vector<float> values;
};

// Fractal value noise: the sum of `octaves` (finest last), produced a row at a time. The
// coarser octaves are sampled at the finest octave's lattice points and the sum interpolated
// from there, so a pixel costs one lerp however many octaves there are; visually the same as
// summing the octaves per pixel.
class NoiseField {
 public:
  NoiseField(uint32_t width, uint32_t height, std::initializer_list<Octave> octaves, Rng& rng)
      : width_(width), cell_(width), weight_(width) {
    std::vector<Lattice> lattices;
    for (const Octave& octave : octaves) lattices.emplace_back(width, height, octave, rng);
    fine_ = std::move(lattices.back());
    lattices.pop_back();
    // Each coarse octave is interpolated at the fine lattice points separably (a row of the
    // coarse lattice per fine row, then one lerp per point), clamped to the frame so that the
    // coarse lattices are never read past their edge.
    for (const Lattice& coarse : lattices) {
      std::vector<uint32_t> cells(fine_.grid_w);
      std::vector<float> weights(fine_.grid_w);
      for (uint32_t gx = 0; gx < fine_.grid_w; ++gx) {
        const double x = std::min<double>(gx * fine_.period, width) * coarse.inverse_period;
        cells[gx] = static_cast<uint32_t>(x);
        weights[gx] = Lattice::Smooth(x - cells[gx]);
      }
      std::vector<float> coarse_row(coarse.grid_w);
      for (uint32_t gy = 0; gy < fine_.grid_h; ++gy) {
        const double y = std::min<double>(gy * fine_.period, height) * coarse.inverse_period;
        const auto cy = static_cast<uint32_t>(y);
        const float ty = Lattice::Smooth(y - cy);
        const float* top = &coarse.values[size_t{cy} * coarse.grid_w];
        const float* bottom = top + coarse.grid_w;
        for (uint32_t i = 0; i < coarse.grid_w; ++i) {
          coarse_row[i] = top[i] + (bottom[i] - top[i]) * ty;
        }
        float* fine_row = &fine_.values[size_t{gy} * fine_.grid_w];
        for (uint32_t gx = 0; gx < fine_.grid_w; ++gx) {
          const float a = coarse_row[cells[gx]];
          fine_row[gx] += a + (coarse_row[cells[gx] + 1] - a) * weights[gx];
        }
      }
    }
    for (uint32_t x = 0; x < width; ++x) {
      const double gx = x / fine_.period;
      cell_[x] = static_cast<uint32_t>(gx);
      weight_[x] = Lattice::Smooth(gx - cell_[x]);
    }
    row_.resize(fine_.grid_w);
  }

  /// Writes row y of the field to out[0, width).
  void Row(uint32_t y, float* out) {
    const double gy = y / fine_.period;
    const auto cy = static_cast<uint32_t>(gy);
    const float ty = Lattice::Smooth(gy - cy);
    const float* top = &fine_.values[size_t{cy} * fine_.grid_w];
    const float* bottom = top + fine_.grid_w;
    for (uint32_t i = 0; i < fine_.grid_w; ++i) row_[i] = top[i] + (bottom[i] - top[i]) * ty;
    for (uint32_t x = 0; x < width_; ++x) {
      const float a = row_[cell_[x]];
      out[x] = a + (row_[cell_[x] + 1] - a) * weight_[x];
    }
  }

 private:
  uint32_t width_;
  Lattice fine_{};
  std::vector<uint32_t> cell_;
  std::vector<float> weight_;
  std::vector<float> row_;
};

struct Color {
  float r, g, b;
};

Color RandomColor(Rng& rng) {
  return {static_cast<float>(rng.Uniform(15, 240)), static_cast<float>(rng.Uniform(15, 240)),
          static_cast<float>(rng.Uniform(15, 240))};
}

}  // namespace

SyntheticSpec SpecFor(uint64_t seed, uint64_t index, double mean_kb) {
  Rng rng(StreamSeed(seed, index, 1));
  uint32_t total = 0;
  for (const Shape& s : kShapes) total += s.weight;
  uint32_t pick = rng.Below(total);
  Shape shape = kShapes[0];
  for (const Shape& s : kShapes) {
    if (pick < s.weight) {
      shape = s;
      break;
    }
    pick -= s.weight;
  }
  SyntheticSpec spec;
  spec.width = shape.width;
  spec.height = shape.height;
  spec.quality = kMinQuality + static_cast<int>(rng.Below(kMaxQuality - kMinQuality + 1));
  const double mean_bpp = mean_kb * 1024 / MeanPixels();
  const double bpp = std::clamp(std::exp(MuFor(mean_bpp) + kSizeSigma * rng.Normal()),
                                MinBytesPerPixel(spec.quality), MaxBytesPerPixel(spec.quality));
  spec.target_bytes = bpp * spec.width * spec.height;
  return spec;
}

PilImage SynthesizePixels(uint64_t seed, uint64_t index, uint32_t width, uint32_t height,
                          double detail) {
  Rng rng(StreamSeed(seed, index, 2));
  const float w = static_cast<float>(width), h = static_cast<float>(height);

  // Every random choice is drawn up front, in a fixed order; the pixels are then made a row at
  // a time, all layers at once, so the working set stays in cache (whole-frame float planes
  // made this memory-bound and three times slower).

  // 1. A colour gradient across the frame, in a random direction.
  const Color c0 = RandomColor(rng), c1 = RandomColor(rng);
  const double angle = rng.Uniform(0, 2 * std::numbers::pi);
  const float dx = static_cast<float>(std::cos(angle)) / (w + h);
  const float dy = static_cast<float>(std::sin(angle)) / (w + h);

  // 2. Soft scene structure: brightness and tint varying over tens to hundreds of pixels.
  const double scene_period = rng.Uniform(60, 200);
  NoiseField scene(width, height,
                   {{scene_period, 45}, {scene_period / 2, 22}, {scene_period / 4, 11}}, rng);
  NoiseField tint(width, height, {{scene_period * 1.5, 25}}, rng);
  const Color tint_dir = {static_cast<float>(rng.Uniform(-1, 1)),
                          static_cast<float>(rng.Uniform(-1, 1)),
                          static_cast<float>(rng.Uniform(-1, 1))};

  // 3. Objects: a few hard-edged ellipses and rectangles, partly transparent.
  struct Object {
    Color color;
    float alpha;
    bool ellipse;
    double cx, cy, rx, ry;
  };
  std::vector<Object> objects(2 + rng.Below(9));
  for (Object& o : objects) {
    o.color = RandomColor(rng);
    o.alpha = static_cast<float>(rng.Uniform(0.6, 1.0));
    o.ellipse = rng.Below(2) == 0;
    o.cx = rng.Uniform(0, w);
    o.cy = rng.Uniform(0, h);
    o.rx = rng.Uniform(0.04, 0.3) * w;
    o.ry = rng.Uniform(0.04, 0.3) * h;
  }

  // 4. Texture and grain, the part that sets the JPEG size. A low-frequency mask leaves some
  // regions smooth (sky, walls) and others busy (foliage, fabric), as in photographs.
  NoiseField mask(width, height, {{scene_period, 1.2f}}, rng);
  NoiseField texture(width, height, {{16, 1.0f}, {8, 0.8f}, {4, 0.6f}, {2, 0.5f}}, rng);
  // Busier images are also busy over more of the frame: past detail 1 the mask opens up, so
  // that large files come from texture everywhere rather than from clipped extremes.
  const auto coverage = static_cast<float>(0.5 + 0.25 * std::log2(std::max(detail, 1.0)));
  const auto texture_gain = static_cast<float>(30 * std::min(detail, 3.0));
  const auto grain_gain = static_cast<float>(12 * std::min(detail, 8.0) / 32768.0);
  const Color channel_gain = {static_cast<float>(rng.Uniform(0.85, 1.15)),
                              static_cast<float>(rng.Uniform(0.85, 1.15)),
                              static_cast<float>(rng.Uniform(0.85, 1.15))};

  PilImage image{width, height, "RGB", std::string(size_t{3} * width * height, '\0')};
  std::vector<float> red(width), green(width), blue(width);
  std::vector<float> scene_row(width), tint_row(width), mask_row(width), texture_row(width);
  std::vector<float> grain_luma(width), grain_cb(width), grain_cr(width);
  for (uint32_t y = 0; y < height; ++y) {
    scene.Row(y, scene_row.data());
    tint.Row(y, tint_row.data());
    mask.Row(y, mask_row.data());
    texture.Row(y, texture_row.data());
    for (uint32_t x = 0; x < width; ++x) {
      const float t = 0.5f + (x - w / 2) * dx + (y - h / 2) * dy;
      red[x] = c0.r + (c1.r - c0.r) * t + scene_row[x] + tint_row[x] * tint_dir.r;
      green[x] = c0.g + (c1.g - c0.g) * t + scene_row[x] + tint_row[x] * tint_dir.g;
      blue[x] = c0.b + (c1.b - c0.b) * t + scene_row[x] + tint_row[x] * tint_dir.b;
    }
    for (const Object& o : objects) {
      const double v = (y - o.cy) / o.ry;
      if (v < -1 || v >= 1) continue;
      const double half = o.ellipse ? o.rx * std::sqrt(1 - v * v) : o.rx;
      const auto x0 = static_cast<uint32_t>(std::clamp(std::ceil(o.cx - half), 0.0, double{w}));
      const auto x1 = static_cast<uint32_t>(std::clamp(std::ceil(o.cx + half), 0.0, double{w}));
      for (uint32_t x = x0; x < x1; ++x) {
        // Objects keep some of the scene's shading, so they are not flat cut-outs.
        red[x] += (o.color.r + 0.5f * scene_row[x] - red[x]) * o.alpha;
        green[x] += (o.color.g + 0.5f * scene_row[x] - green[x]) * o.alpha;
        blue[x] += (o.color.b + 0.5f * scene_row[x] - blue[x]) * o.alpha;
      }
    }
    // The grain is drawn first, in its own (serial) loop, so that the loop after it has no
    // dependency between pixels and vectorizes. One 64-bit draw gives three 16-bit samples:
    // a shared (luminance) part, as in camera noise and real texture, and two colour parts.
    for (uint32_t x = 0; x < width; ++x) {
      const uint64_t noise = rng.Next();
      grain_luma[x] = static_cast<float>(static_cast<int>(noise & 0xFFFF) - 32768);
      grain_cb[x] = 0.3f * static_cast<float>(static_cast<int>((noise >> 16) & 0xFFFF) - 32768);
      grain_cr[x] = 0.3f * static_cast<float>(static_cast<int>((noise >> 32) & 0xFFFF) - 32768);
    }
    for (uint32_t x = 0; x < width; ++x) {
      const float m = std::min(std::max(coverage + mask_row[x], 0.0f), 1.0f);
      const float tex = texture_row[x] * texture_gain * m;
      const float grain = grain_gain * (0.3f + 0.7f * m);
      const float luma = grain_luma[x] * grain;
      const float cb = grain_cb[x] * grain, cr = grain_cr[x] * grain;
      red[x] = std::min(std::max(red[x] + tex * channel_gain.r + luma + cb, 0.0f), 255.0f);
      green[x] = std::min(std::max(green[x] + tex * channel_gain.g + luma + cr, 0.0f), 255.0f);
      blue[x] = std::min(std::max(blue[x] + tex * channel_gain.b + luma - cb - cr, 0.0f), 255.0f);
    }
    char* out = &image.pixels[size_t{3} * width * y];
    for (uint32_t x = 0; x < width; ++x) {
      out[3 * x] = static_cast<char>(static_cast<uint8_t>(red[x] + 0.5f));
      out[3 * x + 1] = static_cast<char>(static_cast<uint8_t>(green[x] + 0.5f));
      out[3 * x + 2] = static_cast<char>(static_cast<uint8_t>(blue[x] + 0.5f));
    }
  }
  return image;
}

Result<std::string> MakeSyntheticJpeg(uint64_t seed, uint64_t index, double mean_kb) {
  const SyntheticSpec spec = SpecFor(seed, index, mean_kb);
  const double pixels = static_cast<double>(spec.width) * spec.height;
  const double target_bpp90 = spec.target_bytes / pixels / QualityFactor(spec.quality);
  const double detail = CalibratedDetail(target_bpp90);
  FERRY_ASSIGN_OR_RETURN(
      std::string jpeg,
      EncodeJpeg(SynthesizePixels(seed, index, spec.width, spec.height, detail), spec.quality));
  // The base layers make some images larger or smaller than the calibration's mean. Taking this
  // image's curve as the calibrated one times a constant, one corrective pass pulls the far
  // outliers in (about one image in six needs it).
  const double ratio = spec.target_bytes / static_cast<double>(jpeg.size());
  if (ratio < 0.8 || ratio > 1.25) {
    const double corrected = CalibratedDetail(CalibratedBytesPerPixel(detail) * ratio);
    FERRY_ASSIGN_OR_RETURN(
        jpeg, EncodeJpeg(SynthesizePixels(seed, index, spec.width, spec.height, corrected),
                         spec.quality));
  }
  return jpeg;
}

}  // namespace ferry::bench
