// What python/ferry hands the native module, converted: option dicts (a key that is missing or
// None takes the default) and (a, b, c) tuples for world shapes and workers.
#pragma once

#include <fmt/format.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "ferry/order/epoch_plan.h"
#include "python/status_exception.h"

namespace ferry::python {

/// d[key] as a T; a value T cannot hold (a number past the engine's range) is an
/// InvalidArgumentError naming the key, not pybind11's unnamed cast error.
template <typename T>
T Cast(const pybind11::dict& d, const char* key) {
  const pybind11::object value = d[key];
  try {
    return value.cast<T>();
  } catch (const pybind11::cast_error&) {
    const std::string got = pybind11::repr(value).cast<std::string>();
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      ThrowStatus(InvalidArgumentError(
          fmt::format("{} must be a whole number from {} to {}, got {}", key,
                      std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), got)));
    }
    ThrowStatus(InvalidArgumentError(fmt::format("{}: cannot take {}", key, got)));
  }
}

template <typename T>
T Get(const pybind11::dict& d, const char* key, T fallback) {
  if (!d.contains(key) || d[key].is_none()) return fallback;
  return Cast<T>(d, key);
}

template <typename T>
std::optional<T> GetOptional(const pybind11::dict& d, const char* key) {
  if (!d.contains(key) || d[key].is_none()) return std::nullopt;
  return Cast<T>(d, key);
}

using Triple = std::tuple<uint32_t, uint32_t, uint32_t>;

/// (nodes, ranks per node, workers per rank)
inline WorldShape World(const Triple& w) {
  return {.nodes = std::get<0>(w),
          .ranks_per_node = std::get<1>(w),
          .workers_per_rank = std::get<2>(w)};
}

/// (node, rank within the node, worker within the rank)
inline WorkerId Worker(const Triple& w) {
  return {.node = std::get<0>(w), .rank = std::get<1>(w), .worker = std::get<2>(w)};
}

}  // namespace ferry::python
