#include "loader/image_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ferry::internal_loader {
namespace {

// Pillow's fixed point for 8-bit resampling (libImaging/Resample.c).
constexpr int kPrecisionBits = 32 - 8 - 2;

uint8_t Clip8(int32_t v) {
  if (v >= (1 << kPrecisionBits) << 8) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// For each output position: the first input index and the fixed-point weights of the inputs
// it blends (Pillow's precompute_coeffs + normalize_coeffs_8bpc).
struct Coefficients {
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;  // out_size x window, row-major
  int window = 0;
};

Coefficients Precompute(uint32_t in_size, double in0, double in1, uint32_t out_size) {
  const double scale = (in1 - in0) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;
  Coefficients c;
  c.window = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.weights.assign(size_t{out_size} * c.window, 0);
  std::vector<double> k(c.window);
  for (uint32_t xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filter_scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > static_cast<int>(in_size)) xmax = static_cast<int>(in_size);
    xmax -= xmin;
    xmax = std::min(xmax, c.window);
    double total = 0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = Triangle((x + xmin - center + 0.5) * ss);
      total += k[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double w = total != 0.0 ? k[x] / total : k[x];
      c.weights[size_t{xx} * c.window + x] = static_cast<int32_t>(
          w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
    }
    c.first[xx] = xmin;
    c.count[xx] = std::max(xmax, 0);
  }
  return c;
}

}  // namespace

Result<RgbImage> ToRgb(const PilImage& image) {
  RgbImage out{image.width, image.height, {}};
  const size_t n = size_t{image.width} * image.height;
  out.pixels.resize(n * 3);
  const auto* in = reinterpret_cast<const uint8_t*>(image.pixels.data());
  auto expect = [&](size_t channels) -> Status {
    if (image.pixels.size() != n * channels) {
      return InvalidArgumentError(fmt::format("a {}x{} {} image with {} bytes of pixels",
                                              image.width, image.height, image.mode,
                                              image.pixels.size()));
    }
    return Status::Ok();
  };
  if (image.mode == "RGB") {
    FERRY_RETURN_IF_ERROR(expect(3));
    std::memcpy(out.pixels.data(), in, n * 3);
  } else if (image.mode == "L" || image.mode == "LA") {
    const size_t step = image.mode == "L" ? 1 : 2;
    FERRY_RETURN_IF_ERROR(expect(step));
    for (size_t i = 0; i < n; ++i) std::memset(&out.pixels[i * 3], in[i * step], 3);
  } else if (image.mode == "RGBA") {
    FERRY_RETURN_IF_ERROR(expect(4));
    for (size_t i = 0; i < n; ++i) std::memcpy(&out.pixels[i * 3], &in[i * 4], 3);
  } else if (image.mode == "CMYK") {
    FERRY_RETURN_IF_ERROR(expect(4));
    // Pillow's cmyk2rgb: r = 255 - clip(c + k) in its integer arithmetic.
    for (size_t i = 0; i < n; ++i) {
      const int k = in[i * 4 + 3];
      for (int ch = 0; ch < 3; ++ch) {
        out.pixels[i * 3 + ch] = static_cast<uint8_t>(255 - std::min(255, in[i * 4 + ch] + k));
      }
    }
  } else {
    return InvalidArgumentError(
        fmt::format("images of mode {} are not converted to RGB by the loader", image.mode));
  }
  return out;
}

RgbImage Crop(const RgbImage& image, int64_t x, int64_t y, uint32_t w, uint32_t h) {
  RgbImage out{w, h, std::vector<uint8_t>(size_t{w} * h * 3, 0)};
  const int64_t x0 = std::max<int64_t>(x, 0);
  const int64_t x1 = std::min<int64_t>(x + w, image.width);
  if (x1 <= x0) return out;
  for (uint32_t r = 0; r < h; ++r) {
    const int64_t sy = y + r;
    if (sy < 0 || sy >= image.height) continue;
    std::memcpy(out.row(r) + (x0 - x) * 3, image.row(static_cast<uint32_t>(sy)) + x0 * 3,
                static_cast<size_t>(x1 - x0) * 3);
  }
  return out;
}

RgbImage Resize(const RgbImage& image, uint32_t out_w, uint32_t out_h, double x0, double y0,
                double x1, double y1) {
  const bool horizontal = out_w != image.width || x0 != 0 || x1 != image.width;
  const bool vertical = out_h != image.height || y0 != 0 || y1 != image.height;
  // As Pillow: the horizontal pass only computes the rows the vertical pass reads. Sums fit in
  // 32 bits: the weights of one output add up to 2^22 and pixels are below 2^8.
  RgbImage temp;
  const RgbImage* source = &image;
  int row_offset = 0;
  Coefficients vc;
  if (vertical) vc = Precompute(image.height, y0, y1, out_h);
  if (horizontal) {
    int first_row = 0, last_row = static_cast<int>(image.height);
    if (vertical) {
      first_row = vc.first.front();
      last_row = vc.first.back() + vc.count.back();
    }
    const Coefficients hc = Precompute(image.width, x0, x1, out_w);
    temp.width = out_w;
    temp.height = static_cast<uint32_t>(last_row - first_row);
    temp.pixels.resize(size_t{temp.width} * temp.height * 3);
    for (uint32_t r = 0; r < temp.height; ++r) {
      const uint8_t* in = image.row(static_cast<uint32_t>(first_row) + r);
      uint8_t* out = temp.row(r);
      for (uint32_t xx = 0; xx < out_w; ++xx) {
        const int32_t* k = &hc.weights[size_t{xx} * hc.window];
        const uint8_t* p = in + size_t(hc.first[xx]) * 3;
        int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
        for (int x = 0, n = hc.count[xx]; x < n; ++x, p += 3) {
          s0 += p[0] * k[x];
          s1 += p[1] * k[x];
          s2 += p[2] * k[x];
        }
        out[xx * 3] = Clip8(s0);
        out[xx * 3 + 1] = Clip8(s1);
        out[xx * 3 + 2] = Clip8(s2);
      }
    }
    source = &temp;
    row_offset = first_row;
  }
  if (!vertical) return source == &temp ? temp : image;
  RgbImage out{source->width, out_h, std::vector<uint8_t>(size_t{source->width} * out_h * 3)};
  const size_t row_bytes = size_t{source->width} * 3;
  std::vector<int32_t> sums(row_bytes);
  for (uint32_t yy = 0; yy < out_h; ++yy) {
    const int32_t* k = &vc.weights[size_t{yy} * vc.window];
    const int first = vc.first[yy] - row_offset;
    std::fill(sums.begin(), sums.end(), 1 << (kPrecisionBits - 1));
    // Row by row, so the inner loop runs along memory (and vectorizes).
    for (int y = 0; y < vc.count[yy]; ++y) {
      const uint8_t* in = source->row(static_cast<uint32_t>(first + y));
      const int32_t w = k[y];
      for (size_t i = 0; i < row_bytes; ++i) sums[i] += in[i] * w;
    }
    uint8_t* o = out.row(yy);
    for (size_t i = 0; i < row_bytes; ++i) o[i] = Clip8(sums[i]);
  }
  return out;
}

void FlipHorizontal(RgbImage& image) {
  for (uint32_t y = 0; y < image.height; ++y) {
    uint8_t* r = image.row(y);
    for (uint32_t a = 0, b = image.width - 1; a < b; ++a, --b) {
      std::swap_ranges(r + a * 3, r + a * 3 + 3, r + b * 3);
    }
  }
}

}  // namespace ferry::internal_loader
