#include "order/feistel_permutation.h"

#include <bit>
#include <cassert>

#include "order/random.h"

namespace ferry::internal_order {

FeistelPermutation::FeistelPermutation(uint64_t n, uint64_t key) : n_(n) {
  assert(n > 0);
  // At least one bit per half, so that n = 1 or 2 still has a network to walk; at most 32.
  const int bits = n <= 4 ? 2 : std::bit_width(n - 1);
  half_bits_ = (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < kRounds; ++r) keys_[r] = DeriveKey(key, static_cast<uint64_t>(r));
}

uint64_t FeistelPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t next = left ^ (Mix64(right ^ keys_[r]) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t FeistelPermutation::operator()(uint64_t i) const {
  assert(i < n_);
  uint64_t x = i;
  do {
    x = Encrypt(x);
  } while (x >= n_);
  return x;
}

}  // namespace ferry::internal_order
