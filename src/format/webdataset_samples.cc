#include "format/webdataset_samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "base/ascii.h"

namespace ferry::internal_format {
namespace {

// WebDataset's base_plus_ext: ^((?:.*/|)[^.]+)[.]([^/]*)$.
std::optional<std::pair<std::string_view, std::string_view>> KeyAndField(std::string_view name) {
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string_view::npos || dot == base) return std::nullopt;
  return std::pair(name.substr(0, dot), name.substr(dot + 1));
}

bool IsTopLevelMeta(std::string_view name) {
  return name.find('/') == std::string_view::npos && name.size() >= 4 && name.starts_with("__") &&
         name.ends_with("__");
}

}  // namespace

Result<std::vector<WebDatasetSample>> GroupWebDatasetSamples(const std::vector<TarMember>& members,
                                                             std::string_view shard) {
  std::vector<WebDatasetSample> samples;
  for (const TarMember& member : members) {
    if (IsTopLevelMeta(member.name)) continue;
    const auto split = KeyAndField(member.name);
    if (!split) continue;
    std::string field = AsciiLower(split->second);
    if (samples.empty() || samples.back().key != split->first) {
      samples.push_back({std::string(split->first), {}});
    }
    auto& fields = samples.back().fields;
    // "__key__" and "__url__" are the sample's own entries in WebDataset: a member that would
    // overwrite them is a duplicate there too.
    if (field == "__key__" || field == "__url__" ||
        std::any_of(fields.begin(), fields.end(),
                    [&](const WebDatasetField& f) { return f.name == field; })) {
      return DataLossError(
          fmt::format("{}: {}: duplicate file name in tar file (field {} twice "
                      "for key {})",
                      shard, member.name, field, split->first));
    }
    fields.push_back({std::move(field), member.offset, member.size});
  }
  return samples;
}

Result<std::vector<WebDatasetSample>> ReadWebDatasetSamples(std::string_view archive,
                                                            std::string_view shard) {
  FERRY_ASSIGN_OR_RETURN(const std::vector<TarMember> members, ScanTar(archive, shard));
  return GroupWebDatasetSamples(members, shard);
}

}  // namespace ferry::internal_format
