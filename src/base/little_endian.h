// Unaligned little-endian loads and stores (MDS stores every integer little-endian).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace ferry {

static_assert(std::endian::native == std::endian::little, "ferry assumes a little-endian host");

template <typename T>
inline T LoadLE(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline uint32_t LoadU32LE(const void* p) { return LoadLE<uint32_t>(p); }

template <typename T>
inline void AppendLE(std::string& out, T v) {
  char buf[sizeof v];
  std::memcpy(buf, &v, sizeof v);
  out.append(buf, sizeof v);
}

inline void StoreU32LE(void* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }

}  // namespace ferry
