#include "image/jpeg_codec.h"

#include <fmt/format.h>
#include <turbojpeg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ferry {
namespace {

// libjpeg's JPEG_MAX_DIMENSION: the largest width or height it will encode.
constexpr uint32_t kMaxJpegDimension = 65500;

struct TjHandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjHandleDeleter>;

struct TjBufferDeleter {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};
using TjBuffer = std::unique_ptr<unsigned char, TjBufferDeleter>;

// What the first frame header (SOFn) says. libjpeg also decodes from the first SOF (a second
// one is an error), so these are the dimensions tjDecompress2 will produce.
struct FrameHeader {
  uint32_t width = 0;
  uint32_t height = 0;
  int precision = 0;
  int components = 0;
};

bool IsStartOfFrame(unsigned marker) {
  // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the range.
  return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

uint32_t LoadU16BE(const unsigned char* p) { return (uint32_t{p[0]} << 8) | p[1]; }

// Walks the marker segments from SOI to the first SOF. We parse the header ourselves rather
// than call tjDecompressHeader3 because that function also insists on classifying the chroma
// subsampling and fails on unusual (but decodable) sampling factors, which Pillow accepts.
Result<FrameHeader> ParseFrameHeader(std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t n = data.size();
  if (n < 2 || p[0] != 0xFF || p[1] != 0xD8) {
    return DataLossError(
        fmt::format("not a JPEG: {} bytes that do not start with the SOI marker FF D8", n));
  }
  size_t pos = 2;
  while (true) {
    // Bytes other than 0xFF between segments are junk that libjpeg warns about and Pillow
    // skips; runs of 0xFF are fill bytes before a marker code.
    while (pos < n && p[pos] != 0xFF) ++pos;
    while (pos < n && p[pos] == 0xFF) ++pos;
    if (pos >= n) {
      return DataLossError(fmt::format("JPEG of {} bytes ends before its frame header (SOF)", n));
    }
    const unsigned marker = p[pos++];
    // FF 00 is a stuffed byte (junk here); TEM, RSTn and a repeated SOI carry no length.
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;
    if (marker == 0xD9 || marker == 0xDA) {
      return DataLossError(fmt::format("JPEG has {} before its frame header (SOF)",
                                       marker == 0xD9 ? "EOI" : "a scan (SOS)"));
    }
    if (n - pos < 2) return DataLossError("JPEG ends inside a marker segment length");
    const size_t length = LoadU16BE(p + pos);
    if (length < 2 || length > n - pos) {
      return DataLossError(
          fmt::format("JPEG marker FF {:02X} at offset {} has length {}, but {} bytes remain",
                      marker, pos - 2, length, n - pos));
    }
    if (IsStartOfFrame(marker)) {
      if (length < 8) return DataLossError(fmt::format("JPEG SOF segment of {} bytes", length));
      FrameHeader frame;
      frame.precision = p[pos + 2];
      frame.height = LoadU16BE(p + pos + 3);
      frame.width = LoadU16BE(p + pos + 5);
      frame.components = p[pos + 7];
      if (length < 8 + 3 * size_t(frame.components)) {
        return DataLossError(
            fmt::format("JPEG SOF segment of {} bytes cannot describe {} "
                        "components",
                        length, frame.components));
      }
      return frame;
    }
    pos += length;
  }
}

struct JpegLayout {
  ImageInfo info;
  int pixel_format = TJPF_RGB;
  int channels = 3;
};

// Pillow's SOF handler: the mode follows the component count alone.
Result<JpegLayout> LayoutFor(std::string_view data) {
  FERRY_ASSIGN_OR_RETURN(FrameHeader frame, ParseFrameHeader(data));
  if (frame.precision != 8) {
    return DataLossError(
        fmt::format("unsupported JPEG: {}-bit samples (only 8-bit is decoded)", frame.precision));
  }
  if (frame.width == 0 || frame.height == 0) {
    return DataLossError(
        fmt::format("unsupported JPEG: frame header says {}x{} (a height "
                    "defined later by a DNL marker is not supported)",
                    frame.width, frame.height));
  }
  JpegLayout layout;
  layout.info.width = frame.width;
  layout.info.height = frame.height;
  switch (frame.components) {
    case 1:
      layout.info.mode = "L";
      layout.pixel_format = TJPF_GRAY;
      layout.channels = 1;
      break;
    case 3:
      layout.info.mode = "RGB";
      layout.pixel_format = TJPF_RGB;
      layout.channels = 3;
      break;
    case 4:
      layout.info.mode = "CMYK";
      layout.pixel_format = TJPF_CMYK;
      layout.channels = 4;
      break;
    default:
      return DataLossError(
          fmt::format("unsupported JPEG: {} components (expected 1, 3 or 4)", frame.components));
  }
  const uint64_t pixels = uint64_t{frame.width} * frame.height;
  if (pixels > kMaxImagePixels) {
    return ResourceExhaustedError(fmt::format(
        "JPEG of {}x{} has {} pixels, more than the limit of {} (Pillow's decompression-bomb "
        "limit)",
        frame.width, frame.height, pixels, kMaxImagePixels));
  }
  return layout;
}

}  // namespace

Result<ImageInfo> ProbeJpeg(std::string_view data) {
  FERRY_ASSIGN_OR_RETURN(JpegLayout layout, LayoutFor(data));
  return std::move(layout.info);
}

Result<PilImage> DecodeJpeg(std::string_view data, int scale_denominator) {
  if (scale_denominator != 1 && scale_denominator != 2 && scale_denominator != 4 &&
      scale_denominator != 8) {
    return InvalidArgumentError(
        fmt::format("JPEG scale denominator {} is not 1, 2, 4 or 8", scale_denominator));
  }
  FERRY_ASSIGN_OR_RETURN(JpegLayout layout, LayoutFor(data));
  const tjscalingfactor factor{1, scale_denominator};
  layout.info.width = static_cast<uint32_t>(TJSCALED(static_cast<int>(layout.info.width), factor));
  layout.info.height =
      static_cast<uint32_t>(TJSCALED(static_cast<int>(layout.info.height), factor));
  TjHandle handle(tjInitDecompress());
  if (handle == nullptr) {
    return ResourceExhaustedError(
        fmt::format("cannot create a JPEG decompressor: {}", tjGetErrorStr2(nullptr)));
  }
  PilImage image;
  image.width = layout.info.width;
  image.height = layout.info.height;
  image.mode = std::move(layout.info.mode);
  image.pixels.resize(size_t{image.width} * image.height * layout.channels);
  // TJFLAG_ACCURATEDCT is TurboJPEG's decode default already; spelled out because Pillow's
  // pixels come from the accurate IDCT. TJFLAG_LIMITSCANS refuses progressive files with more
  // than 500 scans, which otherwise make decoding quadratic (a known denial of service).
  auto decompress = [&](int extra_flags) {
    return tjDecompress2(handle.get(), reinterpret_cast<const unsigned char*>(data.data()),
                         static_cast<unsigned long>(data.size()),
                         reinterpret_cast<unsigned char*>(image.pixels.data()),
                         static_cast<int>(image.width), /*pitch=*/0, static_cast<int>(image.height),
                         layout.pixel_format, TJFLAG_ACCURATEDCT | TJFLAG_LIMITSCANS | extra_flags);
  };
  auto data_loss = [&](std::string_view message) {
    return DataLossError(fmt::format("cannot decode JPEG ({}x{} {}, {} bytes): {}", image.width,
                                     image.height, image.mode, data.size(), message));
  };
  // libjpeg recovers from many kinds of corruption with only a warning (extraneous bytes, a
  // damaged entropy segment), and Pillow then returns the pixels, so we must too. But a stream
  // that runs out is also only a warning to libjpeg (it pads the image with gray), while Pillow
  // raises "image file is truncated". TurboJPEG cannot tell these apart after the fact: its error
  // code stays TJERR_WARNING even when a fatal error follows a warning, and its message is then
  // the error's. So:
  //   1. Decode, stopping at the first warning. Success, or a fatal error with no warning before
  //      it, is final. A first warning "Premature end of JPEG file" means truncated: kDataLoss.
  //   2. For any other warning, decode again without stopping. libjpeg keeps the text of only
  //      the first warning, and a fatal error overwrites it; so the same text as in step 1 means
  //      the decode completed, and another text is the fatal error.
  // Step 2 runs only for corrupt files. A file both corrupt and later truncated decodes padded.
  if (decompress(TJFLAG_STOPONWARNING) != 0) {
    const std::string first_message = tjGetErrorStr2(handle.get());
    if (tjGetErrorCode(handle.get()) == TJERR_FATAL ||
        first_message.starts_with("Premature end of JPEG file")) {
      return data_loss(first_message);
    }
    if (decompress(0) != 0) {
      const std::string_view message = tjGetErrorStr2(handle.get());
      if (message != first_message) return data_loss(message);
    }
  }
  if (layout.pixel_format == TJPF_CMYK) {
    for (char& c : image.pixels) c = static_cast<char>(~static_cast<unsigned char>(c));
  }
  return image;
}

Result<std::string> EncodeJpeg(const PilImage& image, int quality, JpegSubsampling subsampling) {
  int pixel_format = 0;
  int samp = 0;
  uint64_t channels = 0;
  if (image.mode == "L") {
    pixel_format = TJPF_GRAY;
    samp = TJSAMP_GRAY;
    channels = 1;
  } else if (image.mode == "RGB") {
    pixel_format = TJPF_RGB;
    channels = 3;
    switch (subsampling) {
      case JpegSubsampling::k444:
        samp = TJSAMP_444;
        break;
      case JpegSubsampling::k422:
        samp = TJSAMP_422;
        break;
      case JpegSubsampling::k420:
        samp = TJSAMP_420;
        break;
    }
  } else {
    return InvalidArgumentError(
        fmt::format("cannot encode a '{}' image as JPEG (only L and RGB)", image.mode));
  }
  if (image.width == 0 || image.height == 0 || image.width > kMaxJpegDimension ||
      image.height > kMaxJpegDimension) {
    return InvalidArgumentError(
        fmt::format("cannot encode a {}x{} image as JPEG (each side must be 1..{})", image.width,
                    image.height, kMaxJpegDimension));
  }
  const uint64_t expected = uint64_t{image.width} * image.height * channels;
  if (image.pixels.size() != expected) {
    return InvalidArgumentError(fmt::format("{}x{} {} image needs {} pixel bytes, got {}",
                                            image.width, image.height, image.mode, expected,
                                            image.pixels.size()));
  }
  if (quality < 1 || quality > 100) {
    return InvalidArgumentError(fmt::format("JPEG quality {} is outside 1..100", quality));
  }
  TjHandle handle(tjInitCompress());
  if (handle == nullptr) {
    return ResourceExhaustedError(
        fmt::format("cannot create a JPEG compressor: {}", tjGetErrorStr2(nullptr)));
  }
  unsigned char* raw_buffer = nullptr;
  unsigned long size = 0;
  // TurboJPEG compresses with the fast DCT unless told otherwise; Pillow uses libjpeg's
  // default, the accurate one.
  const int rc =
      tjCompress2(handle.get(), reinterpret_cast<const unsigned char*>(image.pixels.data()),
                  static_cast<int>(image.width), /*pitch=*/0, static_cast<int>(image.height),
                  pixel_format, &raw_buffer, &size, samp, quality, TJFLAG_ACCURATEDCT);
  TjBuffer buffer(raw_buffer);
  if (rc != 0) {
    return InternalError(fmt::format("cannot encode {}x{} {} image as JPEG: {}", image.width,
                                     image.height, image.mode, tjGetErrorStr2(handle.get())));
  }
  return std::string(reinterpret_cast<const char*>(buffer.get()), size);
}

}  // namespace ferry
