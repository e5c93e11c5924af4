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

Result<std::vector<SubIndex>> FindSubIndexes(std::vector<std::string> files,
                                             std::string_view root) {
  std::sort(files.begin(), files.end());
  std::vector<SubIndex> found;
  for (std::string& path : files) {
    if (path == "index.json") {
      return AlreadyExistsError(fmt::format(
          "{}/index.json: already exists; merge_index never overwrites an index", root));
    }
    if (!path.ends_with("/index.json")) continue;
    const std::string_view folder_path =
        std::string_view(path).substr(0, path.size() - std::string_view("/index.json").size());
    const size_t slash = folder_path.rfind('/');
    std::string folder(slash == std::string_view::npos ? folder_path
                                                       : folder_path.substr(slash + 1));
    found.push_back({std::move(path), std::move(folder)});
  }
  if (found.empty()) {
    return NotFoundError(fmt::format("{}: no sub-folder holds an index.json", root));
  }
  return found;
}

Result<size_t> MergeIndexUnder(const std::filesystem::path& root) {
  std::error_code ec;
  if (!std::filesystem::exists(root, ec)) {
    return NotFoundError(fmt::format("{} does not exist", root.string()));
  }
  if (!std::filesystem::is_directory(root, ec)) {
    return InvalidArgumentError(fmt::format("{}: not a folder", root.string()));
  }
  std::vector<std::string> files;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) {
      files.push_back(it->path().lexically_relative(root).generic_string());
    }
  }
  if (ec) return ErrnoToStatus(ec.value(), "list folder", root);
  std::string name = root.string();
  while (name.size() > 1 && name.ends_with('/')) name.pop_back();
  FERRY_ASSIGN_OR_RETURN(const std::vector<SubIndex> found, FindSubIndexes(std::move(files), name));
  std::vector<std::filesystem::path> paths;
  for (const SubIndex& sub : found) paths.push_back(root / sub.path);
  return MergeIndexFiles(paths, root);
}

}  // namespace ferry
