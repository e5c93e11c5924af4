// FeistelPermutation: a keyed bijection of [0, n) computed per element in O(1) memory, for
// shuffles too large to materialize (the `naive` order of a whole canonical node, or a block past
// the dense limit). A balanced Feistel network over the smallest even bit width 2h >= bits(n - 1)
// permutes [0, 4^h); cycle walking (re-applying it until the value falls below n) restricts that
// to [0, n). Since 4^h < 4n, a walk takes fewer than 4 steps on average.
//
// Six rounds with SplitMix64's mixer as round function: not a cipher, but far more mixing than a
// data order needs; the output is deterministic on every platform.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>

namespace ferry::internal_order {

class FeistelPermutation {
 public:
  /// \pre n > 0.
  FeistelPermutation(uint64_t n, uint64_t key);

  /// The image of i. \pre i < n.
  uint64_t operator()(uint64_t i) const;

  uint64_t size() const { return n_; }

 private:
  static constexpr int kRounds = 6;
  uint64_t Encrypt(uint64_t x) const;

  uint64_t n_;
  int half_bits_;
  uint64_t half_mask_;
  uint64_t keys_[kRounds];
};

}  // namespace ferry::internal_order
