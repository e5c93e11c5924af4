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

std::vector<ShardFile> ShardDescription::files() const {
  std::vector<ShardFile> out;
  out.reserve(companions.size() + 1);
  for (const CompanionFile& c : companions) {
    out.push_back({.raw = &c.raw, .zip = c.zip ? &*c.zip : nullptr});
  }
  out.push_back({.raw = &raw_data, .zip = zip_data ? &*zip_data : nullptr});
  return out;
}

std::vector<const FileInfo*> ShardDescription::all_forms() const {
  std::vector<const FileInfo*> out;
  for (const ShardFile& f : files()) {
    out.push_back(f.raw);
    if (f.zip) out.push_back(f.zip);
  }
  return out;
}

uint64_t ShardDescription::raw_bytes() const {
  uint64_t bytes = raw_data.bytes;
  for (const CompanionFile& c : companions) bytes += c.raw.bytes;
  return bytes;
}

uint64_t ShardDescription::stored_bytes() const {
  uint64_t bytes = 0;
  for (const ShardFile& f : files()) bytes += (f.zip ? f.zip : f.raw)->bytes;
  return bytes;
}

bool operator==(const ShardDescription& a, const ShardDescription& b) {
  return (a.config == b.config || (a.config && b.config && *a.config == *b.config)) &&
         a.raw_data == b.raw_data && a.zip_data == b.zip_data && a.companions == b.companions &&
         a.samples == b.samples && a.format == b.format;
}

uint64_t DatasetDescription::num_samples() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.samples;
  return n;
}

}  // namespace ferry
