#include "ferry/format/merge_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "base/file_util.h"
#include "base/python_json.h"
#include "ferry/format/index.h"

namespace ferry {

Result<MergedIndex> MergeIndexParts(const std::vector<IndexPart>& parts) {
  nlohmann::ordered_json shards = nlohmann::ordered_json::array();
  for (const IndexPart& part : parts) {
    FERRY_RETURN_IF_ERROR(ParseIndex(part.text, part.origin).status());
    nlohmann::ordered_json sub;
    try {
      sub = nlohmann::ordered_json::parse(part.text);
    } catch (const nlohmann::ordered_json::exception& e) {
      return DataLossError(fmt::format("{}: {}", part.origin, e.what()));
    }
    for (auto& shard : sub["shards"]) {
      for (const char* file : {"raw_data", "zip_data"}) {
        if (shard[file].is_null()) continue;
        auto& basename = shard[file]["basename"];
        basename = part.folder + "/" + basename.get<std::string>();
      }
      shards.push_back(std::move(shard));
    }
  }
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  root["version"] = 2;
  root["shards"] = std::move(shards);
  return MergedIndex{DumpPythonJson(root, JsonKeyOrder::kInsertion), root["shards"].size()};
}

Result<size_t> MergeIndexFiles(const std::vector<std::filesystem::path>& index_files,
                               const std::filesystem::path& out) {
  const std::filesystem::path out_index = out / "index.json";
  std::error_code ec;
  if (std::filesystem::exists(out_index, ec)) {
    return AlreadyExistsError(fmt::format(
        "{}: already exists; merge_index never overwrites an index", out_index.string()));
  }
  std::vector<IndexPart> parts;
  std::set<std::string> seen;
  for (const auto& path : index_files) {
    const std::string key = path.lexically_normal().string();
    if (!seen.insert(key).second) continue;
    FERRY_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
    const std::string folder = path.lexically_normal().parent_path().filename().string();
    if (folder.empty()) {
      return InvalidArgumentError(
          fmt::format("{}: a sub-index must sit in a named folder", path.string()));
    }
    parts.push_back({path.string(), folder, std::move(text)});
  }
  FERRY_ASSIGN_OR_RETURN(MergedIndex merged, MergeIndexParts(parts));
  FERRY_RETURN_IF_ERROR(WriteFileAtomically(out_index, merged.text));
  return merged.shards;
}

Result<size_t> MergeIndexUnder(const std::filesystem::path& root) {
  std::error_code ec;
  if (!std::filesystem::exists(root, ec)) {
    return NotFoundError(fmt::format("{} does not exist", root.string()));
  }
  if (!std::filesystem::is_directory(root, ec)) {
    return InvalidArgumentError(fmt::format("{}: not a folder", root.string()));
  }
  // "out/" and "out" are the same folder; compare normalized paths without a trailing slash.
  auto normal = [](const std::filesystem::path& p) {
    std::filesystem::path n = p.lexically_normal();
    return n.has_filename() ? n : n.parent_path();
  };
  const std::filesystem::path top = normal(root);
  std::vector<std::filesystem::path> found;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename() == "index.json" &&
        normal(it->path().parent_path()) != top) {
      found.push_back(it->path());
    }
  }
  if (ec) return ErrnoToStatus(ec.value(), "list folder", root);
  if (found.empty()) {
    return NotFoundError(fmt::format("{}: no sub-folder holds an index.json", root.string()));
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.string() < b.string(); });
  return MergeIndexFiles(found, root);
}

}  // namespace ferry
