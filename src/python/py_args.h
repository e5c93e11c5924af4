// What python/ferry hands the native module, converted: option dicts (a key that is missing or
// None takes the default) and (a, b, c) tuples for world shapes and workers.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <tuple>

#include "ferry/stream/epoch_plan.h"

namespace ferry::python {

template <typename T>
T Get(const pybind11::dict& d, const char* key, T fallback) {
  if (!d.contains(key) || d[key].is_none()) return fallback;
  return d[key].cast<T>();
}

template <typename T>
std::optional<T> GetOptional(const pybind11::dict& d, const char* key) {
  if (!d.contains(key) || d[key].is_none()) return std::nullopt;
  return d[key].cast<T>();
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
