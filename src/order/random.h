// Deterministic pseudo-randomness for sample orders. Every random choice of an EpochPlan comes
// from here, so that an order is a pure function of (seed, epoch, dataset, C) on every platform
// and library version: std::random_device, std::mt19937's seeding helpers and the std
// distributions (whose output is implementation-defined) are never used.
//
//   Mix64        SplitMix64's finalizer: a bijective 64-bit mixer (Steele, Lea, Flood 2014).
//   DeriveKey    a key for a sub-stream, e.g. DeriveKey(DeriveKey(seed, epoch), canonical node).
//   StreamValue  the i-th output of the SplitMix64 stream seeded with a key: counter-based, so
//                any element is computed in O(1) without the ones before it (lazy shuffles).
//   Rng          xoshiro256** seeded through SplitMix64: a sequential stream for Fisher-Yates.
//   Bounded      Lemire's unbiased multiply-shift draw in [0, n) (rejection keeps it exact).
//
// Thread-safety: the functions are pure; an Rng is a value used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "base/int128.h"

namespace ferry::internal_order {

inline constexpr uint64_t kGolden = 0x9e3779b97f4a7c15;  // 2^64 / golden ratio

constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9;
  x ^= x >> 27;
  x *= 0x94d049bb133111eb;
  x ^= x >> 31;
  return x;
}

/// For a fixed key, distinct values give distinct keys (both mixes are bijections).
constexpr uint64_t DeriveKey(uint64_t key, uint64_t value) {
  return Mix64(key ^ Mix64(value + kGolden));
}

/// The i-th output of SplitMix64 seeded with `key`.
constexpr uint64_t StreamValue(uint64_t key, uint64_t i) { return Mix64(key + (i + 1) * kGolden); }

class Rng {
 public:
  explicit Rng(uint64_t key) {
    for (uint64_t& s : s_) s = Mix64(key += kGolden);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, n). \pre n > 0.
  uint64_t Bounded(uint64_t n) {
    UInt128 m = static_cast<UInt128>(Next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      // Only the 2^64 mod n lowest products are over-represented; reject them.
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<UInt128>(Next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  /// Uniform in [lo, hi]. \pre lo <= hi, hi - lo < 2^64 - 1.
  uint64_t Between(uint64_t lo, uint64_t hi) { return lo + Bounded(hi - lo + 1); }

 private:
  static constexpr uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

/// Fisher-Yates: every permutation of `values` equally likely (up to the generator).
template <typename T>
void Shuffle(std::span<T> values, Rng& rng) {
  for (size_t i = values.size(); i > 1; --i) {
    std::swap(values[i - 1], values[rng.Bounded(i)]);
  }
}

}  // namespace ferry::internal_order
