#include "ferry/format/dataset_description.h"

#include <algorithm>

namespace ferry {

const std::string* FileInfo::FindHash(std::string_view algorithm) const {
  for (const auto& [algo, digest] : hashes) {
    if (algo == algorithm) return &digest;
  }
  return nullptr;
}

std::optional<size_t> ShardConfig::ColumnIndex(std::string_view name) const {
  for (size_t i = 0; i < column_names.size(); ++i) {
    if (column_names[i] == name) return i;
  }
  return std::nullopt;
}

bool ShardConfig::HasUnsafeColumn() const {
  return std::any_of(column_encodings.begin(), column_encodings.end(),
                     [](const ColumnEncoding& e) { return e.unsafe(); });
}

uint64_t DatasetDescription::num_samples() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.samples;
  return n;
}

}  // namespace ferry
