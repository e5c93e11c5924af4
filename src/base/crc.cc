#include "base/crc.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ferry {
namespace {

// Eight tables for a reflected CRC of polynomial `kPoly` (bit-reversed): the first is the
// classic byte-at-a-time table, table k advances a byte k more positions.
template <typename T, T kPoly>
struct SliceTables {
  std::array<std::array<T, 256>, 8> t{};
  constexpr SliceTables() {
    for (unsigned i = 0; i < 256; ++i) {
      T crc = i;
      for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPoly : T{0});
      t[0][i] = crc;
    }
    for (unsigned k = 1; k < 8; ++k) {
      for (unsigned i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
    }
  }
};

template <typename T, T kPoly>
T Update(T crc, std::string_view data) {
  static constexpr SliceTables<T, kPoly> kTables;
  const auto& t = kTables.t;
  crc = ~crc;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);  // little-endian: the first byte lowest, as a reflected CRC eats them
    v ^= crc;
    crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^ t[4][(v >> 24) & 0xff] ^
          t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^ t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
  }
  for (; n > 0; ++p, --n) crc = t[0][(crc ^ *p) & 0xff] ^ static_cast<T>(crc >> 8);
  return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(uint32_t crc, std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint64_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}
#endif

}  // namespace

uint32_t Crc32(uint32_t crc, std::string_view data) {
  return Update<uint32_t, 0xEDB88320u>(crc, data);
}

uint32_t Crc32c(uint32_t crc, std::string_view data) {
#if defined(__x86_64__)
  static const bool kHardware = __builtin_cpu_supports("sse4.2");
  if (kHardware) return Crc32cSse42(crc, data);
#endif
  return Update<uint32_t, 0x82F63B78u>(crc, data);
}

uint64_t Crc64Nvme(uint64_t crc, std::string_view data) {
  return Update<uint64_t, 0x9A6C9329AC4BC9B5ull>(crc, data);
}

}  // namespace ferry
