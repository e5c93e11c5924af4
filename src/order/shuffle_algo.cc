// The names of the shuffle algorithms, as Mosaic Streaming spells them.
#include <array>
#include <string>
#include <utility>

#include "ferry/order/epoch_plan.h"

namespace ferry {
namespace {

constexpr std::array<std::pair<std::string_view, ShuffleAlgo>, 5> kAlgos = {{
    {"naive", ShuffleAlgo::kNaive},
    {"py1s", ShuffleAlgo::kPy1s},
    {"py1b", ShuffleAlgo::kPy1b},
    {"py1br", ShuffleAlgo::kPy1br},
    {"py1e", ShuffleAlgo::kPy1e},
}};

}  // namespace

Result<ShuffleAlgo> ParseShuffleAlgo(std::string_view name) {
  for (const auto& [known, algo] : kAlgos) {
    if (name == known) return algo;
  }
  std::string valid;
  for (const auto& [known, algo] : kAlgos) {
    if (!valid.empty()) valid += ", ";
    valid += known;
  }
  return InvalidArgumentError("shuffle_algo: unknown algorithm \"" + std::string(name) +
                              "\"; valid: " + valid);
}

std::string_view ShuffleAlgoName(ShuffleAlgo algo) {
  for (const auto& [known, a] : kAlgos) {
    if (a == algo) return known;
  }
  return "unknown";
}

}  // namespace ferry
