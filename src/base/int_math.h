// Small integer arithmetic the layers share.
#pragma once

#include <cstdint>

namespace ferry {

/// ceil(a / b) without overflow. \pre b > 0.
constexpr uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace ferry
