#include "ferry/format/shard_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "format/mds_format.h"
#include "format/split_format.h"
#include "format/webdataset_format.h"

namespace ferry {
namespace {

// Every format there is. Built in rather than registered at startup: a static registrar in a
// static library is dropped by the linker when nothing else in its file is used.
const auto& Formats() {
  static const internal_format::MdsFormat mds;
  static const internal_format::WebDatasetFormat webdataset;
  static const internal_format::SplitFormat json("json");
  static const internal_format::SplitFormat csv("csv");
  static const internal_format::SplitFormat tsv("tsv");
  static const std::array<const ShardFormat*, 5> formats = {&mds, &webdataset, &json, &csv, &tsv};
  return formats;
}

}  // namespace

Result<std::unique_ptr<ShardReader>> ShardFormat::FromBuffers(std::vector<std::string> files,
                                                              const ShardDescription& shard,
                                                              std::string origin) const {
  if (files.size() != 1 || !shard.companions.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: a {} shard is one file, not {}", origin, name(), files.size()));
  }
  return FromBuffer(std::move(files[0]), shard, std::move(origin));
}

Result<std::shared_ptr<const SampleSpans>> ShardFormat::ReadSpans(
    const RangeRead& /*read*/, const ShardDescription& /*shard*/) const {
  return std::shared_ptr<const SampleSpans>();
}

Result<std::optional<RangedSample>> ShardFormat::ReadByRange(const RangeRead& /*read*/,
                                                             const ShardDescription& /*shard*/,
                                                             uint32_t /*i*/) const {
  return std::optional<RangedSample>();
}

Result<const ShardFormat*> FindShardFormat(std::string_view name) {
  for (const ShardFormat* format : Formats()) {
    if (format->name() == name) return format;
  }
  return InvalidArgumentError(fmt::format("unknown shard format '{}' (ferry reads: {})", name,
                                          fmt::join(ShardFormatNames(), ", ")));
}

std::vector<std::string_view> ShardFormatNames() {
  std::vector<std::string_view> names;
  for (const ShardFormat* format : Formats()) names.push_back(format->name());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ferry
