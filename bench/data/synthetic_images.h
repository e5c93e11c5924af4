// Synthetic photographs for benchmarks: deterministic JPEGs whose sizes behave like ImageNet's.
//
// A loader benchmark measures decode and I/O, so the files must cost what real ones cost: the
// common ImageNet shapes (500x375, 375x500, 500x333, 640x480, ...), qualities 85..95 and a
// long-tailed size distribution (a lognormal around the requested mean: a few 30 KB files, a few
// 300 KB ones). The content is layered like a photograph: a colour gradient, soft low-frequency
// "scene" noise, a handful of hard-edged shapes, and fine texture plus sensor grain that is
// strong in some regions and absent in others. The amount of texture is what sets a JPEG's
// size, so each image's texture is chosen to hit a size drawn for it (see SpecFor), and one
// corrective re-encode brings outliers back towards it.
//
// Invariant: everything is a pure function of (seed, index, mean size). The same arguments give
// byte-identical JPEGs on every run, in any thread, in any order; no global or thread-local state
// is involved and only our own PRNG (xoshiro256** seeded through SplitMix64) is used.
//
// Thread-safety: all functions are pure and may run concurrently.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

#include "ferry/format/value.h"
#include "ferry/result.h"

namespace ferry::bench {

/// SplitMix64: turns any 64-bit value into a well-mixed one; seeds Rng.
uint64_t SplitMix64(uint64_t& state);

/// xoshiro256**: a small, fast generator whose output is fixed by its seed on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next() {  // inline: the pixel loop draws one per pixel
    const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1).
  double Uniform();
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  /// Uniform in [0, n). \pre n > 0.
  uint32_t Below(uint32_t n);
  /// Standard normal (Box-Muller).
  double Normal();

 private:
  uint64_t s_[4];
};

/// What one image will be: its shape, JPEG quality and the size it aims at.
struct SyntheticSpec {
  uint32_t width = 0;
  uint32_t height = 0;
  int quality = 90;
  double target_bytes = 0;
};

/// The spec of image `index` of the data set `seed` whose files average `mean_kb` KiB.
SyntheticSpec SpecFor(uint64_t seed, uint64_t index, double mean_kb);

/// The RGB pixels of image `index` with `detail` (>= 0) scaling its texture and grain: 0 is
/// smooth, 1 a typical photograph, 4 very busy. Exposed for calibration and tests.
PilImage SynthesizePixels(uint64_t seed, uint64_t index, uint32_t width, uint32_t height,
                          double detail);

/// The JPEG for image `index`: SpecFor, then SynthesizePixels at the detail expected to meet
/// the target, then EncodeJpeg (4:2:0, as Pillow and most cameras write).
Result<std::string> MakeSyntheticJpeg(uint64_t seed, uint64_t index, double mean_kb);

}  // namespace ferry::bench
