// Helpers shared by the image codec tests: hex literals for embedded files and SHA-256 of pixels
// (the form in which Pillow's tobytes() results are recorded).
//
// Thread-safety: pure functions.
#pragma once

#include <openssl/evp.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "base/hex.h"
#include "ferry/format/value.h"

namespace ferry::internal_image_test {

/// "89504e47" -> "\x89PNG"; aborts the test binary on malformed hex (a bug in the test).
inline std::string FromHex(std::string_view hex) { return ::ferry::FromHex(hex).value(); }

/// Lowercase hex SHA-256 of `bytes`.
inline std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  return ToHex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

/// A deterministic test card with texture and sharp edges:
/// (x * 13 + y * 29 + c * 71 + (x * y) % 17) mod 256 for channel c. The Pillow reference files
/// embedded in the tests were made from the same formula, so keep it unchanged.
inline PilImage PatternImage(std::string mode, uint32_t width, uint32_t height) {
  const uint32_t channels = mode == "L" ? 1 : mode == "LA" ? 2 : mode == "RGB" ? 3 : 4;
  PilImage image{width, height, std::move(mode), {}};
  image.pixels.reserve(size_t{width} * height * channels);
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      for (uint32_t c = 0; c < channels; ++c) {
        image.pixels += static_cast<char>((x * 13 + y * 29 + c * 71 + (x * y) % 17) & 0xFF);
      }
    }
  }
  return image;
}

}  // namespace ferry::internal_image_test
