#include "loader/image_pipeline.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "image/jpeg_codec.h"
#include "image/jpeg_region.h"
#include "image/png_codec.h"
#include "order/random.h"

namespace ferry::internal_loader {
namespace {

bool IsJpeg(std::string_view data) {
  return data.size() >= 2 && static_cast<uint8_t>(data[0]) == 0xFF &&
         static_cast<uint8_t>(data[1]) == 0xD8;
}

// torchvision's Resize(int): the shorter side becomes `size`, the other keeps the aspect ratio
// (truncated, as int() does).
std::pair<uint32_t, uint32_t> ResizeTarget(const ImageTransform& t, uint32_t w, uint32_t h) {
  if (t.height != 0) return {t.width, t.height};
  if (w <= h) {
    return {t.width, static_cast<uint32_t>(static_cast<double>(t.width) * h / w)};
  }
  return {static_cast<uint32_t>(static_cast<double>(t.width) * w / h), t.width};
}

struct CropBox {
  int64_t x = 0, y = 0;
  uint32_t w = 0, h = 0;
};

// torchvision's RandomResizedCrop.get_params, with our generator.
CropBox RandomCrop(const ImageTransform& t, uint32_t width, uint32_t height, SampleRng& rng) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(t.ratio[0]), log_hi = std::log(t.ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.Uniform(t.scale[0], t.scale[1]);
    const double aspect = std::exp(rng.Uniform(log_lo, log_hi));
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target * aspect)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int64_t y = rng.Integer(0, height - h + 1);
      const int64_t x = rng.Integer(0, width - w + 1);
      return {x, y, static_cast<uint32_t>(w), static_cast<uint32_t>(h)};
    }
  }
  // Fallback: the whole image, cut to the nearest allowed aspect ratio, centered.
  const double in_ratio = static_cast<double>(width) / height;
  uint32_t w = width, h = height;
  if (in_ratio < t.ratio[0]) {
    h = static_cast<uint32_t>(std::nearbyint(w / t.ratio[0]));
  } else if (in_ratio > t.ratio[1]) {
    w = static_cast<uint32_t>(std::nearbyint(h * t.ratio[1]));
  }
  return {(int64_t{width} - w) / 2, (int64_t{height} - h) / 2, w, h};
}

// torchvision's CenterCrop offsets: int(round((size - crop) / 2.0)), round half to even.
int64_t CenterOffset(uint32_t size, uint32_t crop) {
  return static_cast<int64_t>(std::nearbyint((static_cast<double>(size) - crop) / 2.0));
}

}  // namespace

SampleRng::SampleRng(uint64_t seed, uint64_t epoch, uint64_t sample)
    : rng_(internal_order::DeriveKey(internal_order::DeriveKey(seed, epoch), sample)) {}

uint64_t SampleRng::Next() { return rng_.Next(); }

double SampleRng::Uniform(double lo, double hi) {
  const double u = static_cast<double>(Next() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

int64_t SampleRng::Integer(int64_t lo, int64_t hi_exclusive) {
  const auto span = static_cast<uint64_t>(hi_exclusive - lo);
  return lo + static_cast<int64_t>(span == 0 ? 0 : rng_.Bounded(span));
}

Result<ImagePipeline> ImagePipeline::Create(ImagePipelineOptions options) {
  ImagePipeline p;
  // The output size is the last size any transform fixes.
  for (const ImageTransform& t : options.transforms) {
    using Kind = ImageTransform::Kind;
    if (t.kind == Kind::kRandomHorizontalFlip) {
      if (!(t.p >= 0 && t.p <= 1)) {
        return InvalidArgumentError(fmt::format("RandomHorizontalFlip p={} is not in [0, 1]", t.p));
      }
      continue;
    }
    if (t.width == 0 || (t.kind != Kind::kResize && t.height == 0) || t.width > 65536 ||
        t.height > 65536) {
      return InvalidArgumentError(
          fmt::format("transform size {}x{} is not a size (1 to 65536 pixels)", t.width, t.height));
    }
    if (t.kind == Kind::kRandomResizedCrop && !(t.scale[0] > 0 && t.scale[0] <= t.scale[1] &&
                                                t.ratio[0] > 0 && t.ratio[0] <= t.ratio[1])) {
      return InvalidArgumentError(
          fmt::format("RandomResizedCrop scale ({}, {}) and ratio ({}, {}) must be positive, low "
                      "to high",
                      t.scale[0], t.scale[1], t.ratio[0], t.ratio[1]));
    }
    if (t.kind == Kind::kResize && t.height == 0) {
      p.out_width_ = p.out_height_ = 0;  // depends on the image
    } else {
      p.out_width_ = t.width;
      p.out_height_ = t.height;
    }
  }
  if (p.out_width_ == 0) {
    return InvalidArgumentError(
        "image transforms must end in a fixed size for batching (add CenterCrop, "
        "RandomResizedCrop or Resize((h, w)))");
  }
  if ((options.mean || options.std) && !options.to_float) {
    return InvalidArgumentError("Normalize needs a float output (ToTensor with dtype float32)");
  }
  if (options.std) {
    for (float s : *options.std) {
      if (!(s > 0)) return InvalidArgumentError(fmt::format("Normalize std {} is not positive", s));
    }
  }
  p.options_ = std::move(options);
  return p;
}

size_t ImagePipeline::out_bytes() const {
  return size_t{out_width_} * out_height_ * 3 * (options_.to_float ? 4 : 1);
}

Result<RgbImage> ImagePipeline::Transform(RgbImage image, SampleRng& rng, size_t first) const {
  for (size_t i = first; i < options_.transforms.size(); ++i) {
    const ImageTransform& t = options_.transforms[i];
    switch (t.kind) {
      case ImageTransform::Kind::kResize: {
        const auto [w, h] = ResizeTarget(t, image.width, image.height);
        image = Resize(image, std::max(w, 1u), std::max(h, 1u));
        break;
      }
      case ImageTransform::Kind::kCenterCrop:
        image = Crop(image, CenterOffset(image.width, t.width),
                     CenterOffset(image.height, t.height), t.width, t.height);
        break;
      case ImageTransform::Kind::kRandomResizedCrop: {
        const CropBox box = RandomCrop(t, image.width, image.height, rng);
        image = Resize(Crop(image, box.x, box.y, box.w, box.h), t.width, t.height);
        break;
      }
      case ImageTransform::Kind::kRandomHorizontalFlip:
        if (rng.Uniform(0, 1) < t.p) FlipHorizontal(image);
        break;
    }
  }
  if (image.width != out_width_ || image.height != out_height_) {
    return InternalError(fmt::format("transforms gave {}x{}, expected {}x{}", image.width,
                                     image.height, out_width_, out_height_));
  }
  return image;
}

Result<std::optional<RgbImage>> ImagePipeline::CropWhileDecoding(std::string_view encoded,
                                                                 SampleRng& rng) const {
  const ImageTransform& t = options_.transforms.front();
  FERRY_ASSIGN_OR_RETURN(ImageInfo info, ProbeJpeg(encoded));
  if (info.mode == "CMYK") return std::optional<RgbImage>();  // no region decoding: whole
  const CropBox box = RandomCrop(t, info.width, info.height, rng);
  int d = 1;
  if (options_.dct_scaling) {
    for (int candidate : {8, 4, 2}) {
      if (box.w / candidate >= t.width && box.h / candidate >= t.height) {
        d = candidate;
        break;
      }
    }
  }
  // The crop in the scaled image, widened to whole pixels; the resize then takes the exact
  // (fractional) box inside it.
  const uint32_t scaled_w = (info.width + d - 1) / d, scaled_h = (info.height + d - 1) / d;
  const double bx0 = static_cast<double>(box.x) / d, by0 = static_cast<double>(box.y) / d;
  const double bx1 = static_cast<double>(box.x + box.w) / d;
  const double by1 = static_cast<double>(box.y + box.h) / d;
  const auto x0 = static_cast<uint32_t>(std::floor(bx0));
  const auto y0 = static_cast<uint32_t>(std::floor(by0));
  const uint32_t x1 = std::min(scaled_w, static_cast<uint32_t>(std::ceil(bx1)));
  const uint32_t y1 = std::min(scaled_h, static_cast<uint32_t>(std::ceil(by1)));
  FERRY_ASSIGN_OR_RETURN(PilImage region, DecodeJpegRegion(encoded, {x0, y0, x1 - x0, y1 - y0}, d));
  FERRY_ASSIGN_OR_RETURN(RgbImage rgb, ToRgb(region));
  return std::optional<RgbImage>(Resize(rgb, t.width, t.height, bx0 - x0, by0 - y0,
                                        std::min<double>(bx1 - x0, rgb.width),
                                        std::min<double>(by1 - y0, rgb.height)));
}

Status ImagePipeline::Apply(std::string_view encoded, SampleRng& rng, uint8_t* out) const {
  if (IsJpeg(encoded) && !options_.transforms.empty() &&
      options_.transforms.front().kind == ImageTransform::Kind::kRandomResizedCrop) {
    FERRY_ASSIGN_OR_RETURN(std::optional<RgbImage> cropped, CropWhileDecoding(encoded, rng));
    if (cropped) {
      FERRY_ASSIGN_OR_RETURN(RgbImage rgb, Transform(std::move(*cropped), rng, 1));
      Write(rgb, out);
      return Status::Ok();
    }
  }
  PilImage decoded;
  if (IsJpeg(encoded)) {
    int denominator = 1;
    const ImageTransform* first = options_.transforms.empty() ? nullptr : &options_.transforms[0];
    if (options_.dct_scaling && first != nullptr && first->kind == ImageTransform::Kind::kResize) {
      FERRY_ASSIGN_OR_RETURN(ImageInfo info, ProbeJpeg(encoded));
      const auto [w, h] = ResizeTarget(*first, info.width, info.height);
      // The largest 1/d that still leaves at least the target size: the resize then only
      // shrinks by less than 2x, from a decode that did a fraction of the work.
      for (int d : {8, 4, 2}) {
        if ((info.width + d - 1) / d >= w && (info.height + d - 1) / d >= h) {
          denominator = d;
          break;
        }
      }
    }
    FERRY_ASSIGN_OR_RETURN(decoded, DecodeJpeg(encoded, denominator));
  } else {
    FERRY_ASSIGN_OR_RETURN(decoded, DecodePng(encoded));
  }
  FERRY_ASSIGN_OR_RETURN(RgbImage rgb, ToRgb(decoded));
  FERRY_ASSIGN_OR_RETURN(rgb, Transform(std::move(rgb), rng));
  Write(rgb, out);
  return Status::Ok();
}

void ImagePipeline::Write(const RgbImage& image, uint8_t* out) const {
  const size_t n = size_t{image.width} * image.height;
  if (!options_.to_float) {
    if (!options_.channels_first) {
      std::memcpy(out, image.pixels.data(), n * 3);
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      for (int c = 0; c < 3; ++c) out[c * n + i] = image.pixels[i * 3 + c];
    }
    return;
  }
  std::array<float, 3> scale{}, shift{};
  for (int c = 0; c < 3; ++c) {
    const float mean = options_.mean ? (*options_.mean)[c] : 0.0f;
    const float std = options_.std ? (*options_.std)[c] : 1.0f;
    scale[c] = 1.0f / (255.0f * std);
    shift[c] = -mean / std;
  }
  auto* f = reinterpret_cast<float*>(out);
  for (size_t i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) {
      const float v = static_cast<float>(image.pixels[i * 3 + c]) * scale[c] + shift[c];
      f[options_.channels_first ? c * n + i : i * 3 + c] = v;
    }
  }
}

}  // namespace ferry::internal_loader
