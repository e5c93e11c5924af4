#include "image/png_codec.h"

#include <fmt/format.h>
#include <png.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

// libpng reports errors by calling our error function, which must not return: we longjmp back to
// the setjmp in the function that called into libpng. A longjmp skips destructors, so every
// function below that calls setjmp (ReadHeader, ReadRows, WriteImage) is written in C style: its
// locals and arguments are pointers and plain structs, and the C++ objects that need destroying
// (the png structs' guard, the output strings, the row vectors) live in its caller, whose frame
// the longjmp never crosses. The callbacks copy libpng's message into the session before jumping.

namespace ferry {
namespace {

// The most bytes deflate can inflate from one input byte: a 258-byte match coded in 2 bits.
constexpr uint64_t kMaxDeflateRatio = 1032;

// Everything libpng's callbacks touch. Trivially destructible on purpose (see above).
struct PngSession {
  png_structp png = nullptr;
  png_infop info = nullptr;
  // Reading: the encoded bytes and how far libpng has consumed them.
  const unsigned char* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  // Writing: where the encoded bytes go (owned by the caller of WriteImage).
  std::string* out = nullptr;
  char error[256] = {};
};

[[noreturn]] void OnPngError(png_structp png, png_const_charp message) {
  auto* session = static_cast<PngSession*>(png_get_error_ptr(png));
  std::snprintf(session->error, sizeof(session->error), "%s", message);
  png_longjmp(png, 1);
}

// Warnings are conditions libpng recovers from (a bad ancillary CRC, an unknown chunk); Pillow
// decodes such files, and printing them to stderr from a library would be noise.
void OnPngWarning(png_structp, png_const_charp) {}

void OnPngRead(png_structp png, png_bytep out, size_t length) {
  auto* session = static_cast<PngSession*>(png_get_io_ptr(png));
  if (length > session->size - session->pos) {
    png_error(png, "unexpected end of data (the PNG is truncated)");
  }
  std::memcpy(out, session->data + session->pos, length);
  session->pos += length;
}

void OnPngWrite(png_structp png, png_bytep bytes, size_t length) {
  auto* session = static_cast<PngSession*>(png_get_io_ptr(png));
  bool appended = true;
  try {
    session->out->append(reinterpret_cast<const char*>(bytes), length);
  } catch (const std::exception&) {
    appended = false;  // std::bad_alloc; png_error below must not run inside the handler
  }
  if (!appended) png_error(png, "out of memory while writing the PNG");
}

void OnPngFlush(png_structp) {}

struct PngHeader {
  uint32_t width = 0;
  uint32_t height = 0;
  int bit_depth = 0;
  int color_type = 0;
  int channels = 0;
};

// setjmp frame: C style only.
bool ReadHeader(PngSession* session, PngHeader* header) {
  if (setjmp(png_jmpbuf(session->png))) return false;
  png_set_read_fn(session->png, session, OnPngRead);
  png_read_info(session->png, session->info);
  header->width = png_get_image_width(session->png, session->info);
  header->height = png_get_image_height(session->png, session->info);
  header->bit_depth = png_get_bit_depth(session->png, session->info);
  header->color_type = png_get_color_type(session->png, session->info);
  header->channels = png_get_channels(session->png, session->info);
  return true;
}

// The libpng transforms that turn the stored samples into Pillow's raw mode.
struct PngTransforms {
  bool packing = false;      // 1/2/4-bit samples to one byte each
  bool strip_16 = false;     // 16-bit samples to their high byte
  bool gray_to_rgb = false;  // gray to R = G = B
};

// setjmp frame: C style only. Sets up the transforms and reports the resulting row size.
bool ApplyTransforms(PngSession* session, const PngTransforms* transforms, size_t* row_bytes) {
  if (setjmp(png_jmpbuf(session->png))) return false;
  if (transforms->packing) png_set_packing(session->png);
  if (transforms->strip_16) png_set_strip_16(session->png);
  if (transforms->gray_to_rgb) png_set_gray_to_rgb(session->png);
  png_set_interlace_handling(session->png);
  png_read_update_info(session->png, session->info);
  *row_bytes = png_get_rowbytes(session->png, session->info);
  return true;
}

// setjmp frame: C style only. `rows` points at height row pointers into the caller's buffer.
bool ReadRows(PngSession* session, png_bytepp rows) {
  if (setjmp(png_jmpbuf(session->png))) return false;
  png_read_image(session->png, rows);
  return true;
}

struct PngWriteArgs {
  uint32_t width = 0;
  uint32_t height = 0;
  int color_type = 0;
  int compression_level = 6;
};

// setjmp frame: C style only.
bool WriteImage(PngSession* session, const PngWriteArgs* args, png_bytepp rows) {
  if (setjmp(png_jmpbuf(session->png))) return false;
  png_set_write_fn(session->png, session, OnPngWrite, OnPngFlush);
  png_set_IHDR(session->png, session->info, args->width, args->height, 8, args->color_type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(session->png, args->compression_level);
  png_write_info(session->png, session->info);
  png_write_image(session->png, rows);
  png_write_end(session->png, nullptr);
  return true;
}

// Owns the libpng structs of one call; destroys them on every path out of the caller.
class PngReadGuard {
 public:
  explicit PngReadGuard(PngSession* session) : session_(session) {}
  ~PngReadGuard() {
    if (session_->png != nullptr) {
      png_destroy_read_struct(&session_->png, &session_->info, nullptr);
    }
  }
  PngReadGuard(const PngReadGuard&) = delete;
  PngReadGuard& operator=(const PngReadGuard&) = delete;

 private:
  PngSession* session_;
};

class PngWriteGuard {
 public:
  explicit PngWriteGuard(PngSession* session) : session_(session) {}
  ~PngWriteGuard() {
    if (session_->png != nullptr) png_destroy_write_struct(&session_->png, &session_->info);
  }
  PngWriteGuard(const PngWriteGuard&) = delete;
  PngWriteGuard& operator=(const PngWriteGuard&) = delete;

 private:
  PngSession* session_;
};

Status PngError(const PngSession& session, std::string_view what) {
  return DataLossError(
      fmt::format("cannot decode PNG ({} bytes): {}: {}", session.size, what, session.error));
}

// How Pillow 9.4 opens a PNG of this bit depth and colour type.
struct PngLayout {
  std::string mode;
  PngTransforms transforms;
  size_t row_bytes = 0;  // after the transforms
};

Result<PngLayout> LayoutFor(const PngHeader& header) {
  const size_t w = header.width;
  PngLayout layout;
  const int depth = header.bit_depth;
  switch (header.color_type) {
    case PNG_COLOR_TYPE_GRAY:
      if (depth == 1) {
        layout.mode = "1";
        layout.row_bytes = (w + 7) / 8;
      } else if (depth == 16) {
        layout.mode = "I";
        layout.row_bytes = 2 * w;  // widened to 4 bytes a pixel after reading
      } else {
        layout.mode = "L";
        layout.transforms.packing = depth < 8;
        layout.row_bytes = w;
      }
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      if (depth == 16) {
        layout.mode = "RGBA";
        layout.transforms.strip_16 = true;
        layout.transforms.gray_to_rgb = true;
        layout.row_bytes = 4 * w;
      } else {
        layout.mode = "LA";
        layout.row_bytes = 2 * w;
      }
      break;
    case PNG_COLOR_TYPE_RGB:
      layout.mode = "RGB";
      layout.transforms.strip_16 = depth == 16;
      layout.row_bytes = 3 * w;
      break;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      layout.mode = "RGBA";
      layout.transforms.strip_16 = depth == 16;
      layout.row_bytes = 4 * w;
      break;
    case PNG_COLOR_TYPE_PALETTE:
      layout.mode = "P";
      layout.transforms.packing = depth < 8;
      layout.row_bytes = w;
      break;
    default:
      return DataLossError(fmt::format("PNG colour type {} is not valid", header.color_type));
  }
  return layout;
}

// Opens `data` and reads the chunks up to the image data into `session`, which the caller's
// PngReadGuard owns. Checks the limits that must hold before any pixel buffer is allocated.
Result<PngHeader> OpenPng(std::string_view data, PngSession& session) {
  session.data = reinterpret_cast<const unsigned char*>(data.data());
  session.size = data.size();
  if (data.size() < 8 || png_sig_cmp(session.data, 0, 8) != 0) {
    return DataLossError(fmt::format(
        "not a PNG: {} bytes that do not start with the PNG signature 89 50 4E 47 0D 0A 1A 0A",
        data.size()));
  }
  session.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &session, OnPngError, OnPngWarning);
  if (session.png != nullptr) session.info = png_create_info_struct(session.png);
  if (session.png == nullptr || session.info == nullptr) {
    return ResourceExhaustedError("cannot allocate libpng read structures");
  }
  PngHeader header;
  if (!ReadHeader(&session, &header)) return PngError(session, "reading the header");
  const uint64_t pixels = uint64_t{header.width} * header.height;
  if (pixels > kMaxImagePixels) {
    return ResourceExhaustedError(fmt::format(
        "PNG of {}x{} has {} pixels, more than the limit of {} (Pillow's decompression-bomb "
        "limit)",
        header.width, header.height, pixels, kMaxImagePixels));
  }
  const uint64_t min_image_bytes =
      (pixels * static_cast<uint64_t>(header.channels * header.bit_depth) + 7) / 8;
  if (min_image_bytes > kMaxDeflateRatio * data.size()) {
    return DataLossError(fmt::format(
        "PNG of {}x{} needs at least {} bytes of image data, more than its {} bytes can inflate "
        "to (the file is truncated or its header is corrupt)",
        header.width, header.height, min_image_bytes, data.size()));
  }
  return header;
}

}  // namespace

Result<ImageInfo> ProbePng(std::string_view data) {
  PngSession session;
  PngReadGuard guard(&session);
  FERRY_ASSIGN_OR_RETURN(PngHeader header, OpenPng(data, session));
  FERRY_ASSIGN_OR_RETURN(PngLayout layout, LayoutFor(header));
  return ImageInfo{header.width, header.height, std::move(layout.mode)};
}

Result<PilImage> DecodePng(std::string_view data) {
  PngSession session;
  PngReadGuard guard(&session);
  FERRY_ASSIGN_OR_RETURN(PngHeader header, OpenPng(data, session));
  FERRY_ASSIGN_OR_RETURN(PngLayout layout, LayoutFor(header));
  size_t row_bytes = 0;
  if (!ApplyTransforms(&session, &layout.transforms, &row_bytes)) {
    return PngError(session, "setting up the decoder");
  }
  if (row_bytes != layout.row_bytes) {
    return InternalError(fmt::format(
        "libpng rows of {} bytes for a {}-pixel-wide {}-bit PNG of "
        "colour type {}; expected {}",
        row_bytes, header.width, header.bit_depth, header.color_type, layout.row_bytes));
  }

  std::string buffer(row_bytes * header.height, '\0');
  std::vector<png_bytep> rows(header.height);
  for (uint32_t y = 0; y < header.height; ++y) {
    rows[y] = reinterpret_cast<png_bytep>(buffer.data()) + size_t{y} * row_bytes;
  }
  if (!ReadRows(&session, rows.data())) return PngError(session, "reading the image data");

  PilImage image;
  image.width = header.width;
  image.height = header.height;
  image.mode = std::move(layout.mode);
  if (image.mode == "1" && header.width % 8 != 0) {
    // Pillow unpacks to one byte a pixel and packs again, so the padding bits come out zero
    // whatever the file held. libpng's row combining already leaves the bits past the row end
    // as they were in our zeroed buffer; clearing them here keeps that from being load-bearing.
    const auto mask = static_cast<unsigned char>(0xFF << (8 - header.width % 8));
    for (uint32_t y = 0; y < header.height; ++y) rows[y][row_bytes - 1] &= mask;
  } else if (image.mode == "L" && header.bit_depth < 8) {
    // Pillow's L;2 and L;4 unpackers spread the levels over 0..255.
    const unsigned scale = header.bit_depth == 2 ? 85 : 17;
    for (char& c : buffer) c = static_cast<char>(static_cast<unsigned char>(c) * scale);
  } else if (image.mode == "I") {
    // I;16B -> I: each big-endian 16-bit sample becomes a little-endian int32.
    std::string widened(buffer.size() * 2, '\0');
    for (size_t i = 0, n = buffer.size() / 2; i < n; ++i) {
      widened[4 * i] = buffer[2 * i + 1];
      widened[4 * i + 1] = buffer[2 * i];
    }
    buffer = std::move(widened);
  }
  image.pixels = std::move(buffer);
  return image;
}

Result<std::string> EncodePng(const PilImage& image, int compression_level) {
  PngWriteArgs args;
  uint64_t channels = 0;
  if (image.mode == "L") {
    args.color_type = PNG_COLOR_TYPE_GRAY;
    channels = 1;
  } else if (image.mode == "LA") {
    args.color_type = PNG_COLOR_TYPE_GRAY_ALPHA;
    channels = 2;
  } else if (image.mode == "RGB") {
    args.color_type = PNG_COLOR_TYPE_RGB;
    channels = 3;
  } else if (image.mode == "RGBA") {
    args.color_type = PNG_COLOR_TYPE_RGB_ALPHA;
    channels = 4;
  } else {
    return InvalidArgumentError(
        fmt::format("cannot encode a '{}' image as PNG (only L, LA, RGB and RGBA)", image.mode));
  }
  // PNG allows up to 2^31 - 1; libpng's default user limit is 1,000,000 on each side.
  constexpr uint32_t kMaxSide = 1000000;
  if (image.width == 0 || image.height == 0 || image.width > kMaxSide || image.height > kMaxSide) {
    return InvalidArgumentError(
        fmt::format("cannot encode a {}x{} image as PNG (each side must "
                    "be 1..{})",
                    image.width, image.height, kMaxSide));
  }
  const uint64_t row_bytes = uint64_t{image.width} * channels;
  if (image.pixels.size() != row_bytes * image.height) {
    return InvalidArgumentError(fmt::format("{}x{} {} image needs {} pixel bytes, got {}",
                                            image.width, image.height, image.mode,
                                            row_bytes * image.height, image.pixels.size()));
  }
  if (compression_level < 0 || compression_level > 9) {
    return InvalidArgumentError(
        fmt::format("PNG compression level {} is outside 0..9", compression_level));
  }
  args.width = image.width;
  args.height = image.height;
  args.compression_level = compression_level;

  std::string out;
  PngSession session;
  session.out = &out;
  PngWriteGuard guard(&session);
  session.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &session, OnPngError, OnPngWarning);
  if (session.png != nullptr) session.info = png_create_info_struct(session.png);
  if (session.png == nullptr || session.info == nullptr) {
    return ResourceExhaustedError("cannot allocate libpng write structures");
  }
  // libpng only reads through the row pointers when writing; the cast drops const for its API.
  std::vector<png_bytep> rows(image.height);
  auto* base = reinterpret_cast<png_bytep>(const_cast<char*>(image.pixels.data()));
  for (uint32_t y = 0; y < image.height; ++y) rows[y] = base + y * row_bytes;
  if (!WriteImage(&session, &args, rows.data())) {
    return InternalError(fmt::format("cannot encode {}x{} {} image as PNG: {}", image.width,
                                     image.height, image.mode, session.error));
  }
  return out;
}

}  // namespace ferry
