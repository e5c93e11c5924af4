#include "image/jpeg_region.h"

#include <fmt/format.h>

// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <string>

#include "image/image_info.h"

namespace ferry {
namespace {

// libjpeg reports fatal errors by calling error_exit, which must not return: we longjmp back
// to DecodeInto. Nothing with a destructor lives between the setjmp and any longjmp.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;  // the "Premature end of JPEG file" warning: an error for us, as in Pillow
};

void OnError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void OnMessage(j_common_ptr cinfo, int level) {
  // Level -1 is a warning: libjpeg recovered (Pillow decodes such files too), except that a
  // stream that runs out is padded with gray, which Pillow refuses.
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    reinterpret_cast<ErrorManager*>(cinfo->err)->truncated = true;
  }
}

// Decodes into `out` (already sized). Returns false with err->message set on failure.
// Kept free of objects with destructors because of the longjmp.
bool DecodeInto(jpeg_decompress_struct* cinfo, ErrorManager* err, const unsigned char* data,
                size_t size, JpegRegion region, int denominator, unsigned char* out, int channels,
                unsigned char* row, bool* region_ok) {
  if (setjmp(err->jump) != 0) return false;
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  cinfo->out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned int>(denominator);
  cinfo->dct_method = JDCT_ISLOW;
  jpeg_start_decompress(cinfo);
  if (region.x + uint64_t{region.width} > cinfo->output_width ||
      region.y + uint64_t{region.height} > cinfo->output_height) {
    *region_ok = false;
    return false;
  }
  // A margin on both sides: fancy upsampling at the edge of a cropped band sees no neighbour
  // chroma and would change the pixels there; a full iMCU further out, it does not reach in.
  constexpr uint32_t kMargin = 16;
  JDIMENSION xoffset = region.x > kMargin ? region.x - kMargin : 0;
  JDIMENSION width =
      std::min<JDIMENSION>(cinfo->output_width, region.x + region.width + kMargin) - xoffset;
  jpeg_crop_scanline(cinfo, &xoffset, &width);  // widened to whole iMCUs
  if (region.y > 0) jpeg_skip_scanlines(cinfo, region.y);
  const size_t skip = (region.x - xoffset) * static_cast<size_t>(channels);
  const size_t bytes = region.width * static_cast<size_t>(channels);
  for (uint32_t r = 0; r < region.height; ++r) {
    JSAMPROW rows[1] = {row};
    if (jpeg_read_scanlines(cinfo, rows, 1) != 1) {
      std::snprintf(err->message, sizeof(err->message), "no scanline %u", region.y + r);
      return false;
    }
    std::memcpy(out + r * bytes, row + skip, bytes);
  }
  jpeg_abort_decompress(cinfo);
  return !err->truncated;
}

}  // namespace

Result<PilImage> DecodeJpegRegion(std::string_view data, JpegRegion region, int scale_denominator) {
  if (scale_denominator != 1 && scale_denominator != 2 && scale_denominator != 4 &&
      scale_denominator != 8) {
    return InvalidArgumentError(
        fmt::format("JPEG scale denominator {} is not 1, 2, 4 or 8", scale_denominator));
  }
  if (region.width == 0 || region.height == 0) {
    return InvalidArgumentError("an empty JPEG region");
  }
  jpeg_decompress_struct cinfo;
  ErrorManager err{};
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = OnError;
  err.pub.emit_message = OnMessage;
  // Components and size from a header-only pass first (cheap): what to ask libjpeg for, and the
  // decompression-bomb check before any pixel is allocated.
  int channels = 0;
  uint32_t full_width = 0, full_height = 0;
  {
    jpeg_decompress_struct probe;
    ErrorManager probe_err{};
    probe.err = jpeg_std_error(&probe_err.pub);
    probe_err.pub.error_exit = OnError;
    probe_err.pub.emit_message = OnMessage;
    if (setjmp(probe_err.jump) != 0) {
      jpeg_destroy_decompress(&probe);
      return DataLossError(
          fmt::format("cannot decode JPEG ({} bytes): {}", data.size(), probe_err.message));
    }
    jpeg_create_decompress(&probe);
    jpeg_mem_src(&probe, reinterpret_cast<const unsigned char*>(data.data()),
                 static_cast<unsigned long>(data.size()));
    jpeg_read_header(&probe, TRUE);
    channels = probe.num_components;
    full_width = probe.image_width;
    full_height = probe.image_height;
    jpeg_destroy_decompress(&probe);
  }
  if (channels != 1 && channels != 3) {
    return UnimplementedError(
        fmt::format("region decoding of {}-component JPEGs (decode them whole)", channels));
  }
  if (uint64_t{full_width} * full_height > kMaxImagePixels) {
    return ResourceExhaustedError(fmt::format("JPEG of {}x{} is above the pixel limit of {}",
                                              full_width, full_height, kMaxImagePixels));
  }
  PilImage image;
  image.width = region.width;
  image.height = region.height;
  image.mode = channels == 1 ? "L" : "RGB";
  image.pixels.resize(size_t{region.width} * region.height * channels);
  // One scanline of the widened band: at most the scaled image width.
  std::string row(size_t{full_width} * channels + 64, '\0');
  bool region_ok = true;
  const bool ok =
      DecodeInto(&cinfo, &err, reinterpret_cast<const unsigned char*>(data.data()), data.size(),
                 region, scale_denominator, reinterpret_cast<unsigned char*>(image.pixels.data()),
                 channels, reinterpret_cast<unsigned char*>(row.data()), &region_ok);
  const bool truncated = err.truncated;
  jpeg_destroy_decompress(&cinfo);
  if (!region_ok) {
    return InvalidArgumentError(
        fmt::format("JPEG region {}x{} at ({}, {}) is outside the {}x{} "
                    "image (scale 1/{})",
                    region.width, region.height, region.x, region.y, full_width, full_height,
                    scale_denominator));
  }
  if (!ok) {
    return DataLossError(fmt::format("cannot decode JPEG ({}x{}, {} bytes): {}", full_width,
                                     full_height, data.size(),
                                     truncated ? "Premature end of JPEG file" : err.message));
  }
  return image;
}

}  // namespace ferry
