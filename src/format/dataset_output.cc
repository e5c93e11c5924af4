#include "format/dataset_output.h"

#include <fmt/format.h>

#include <regex>
#include <string>
#include <system_error>
#include <vector>

#include "base/file_util.h"
#include "format/hash.h"

namespace ferry::internal_format {
namespace {

bool IsShardFileName(const std::string& name) {
  static const std::regex kShard(R"(shard\.[0-9]{5,}\.(mds|json|csv|tsv)(\.meta)?(\.[a-z0-9]+)?)");
  return std::regex_match(name, kShard);
}

}  // namespace

Status PrepareOutput(const std::filesystem::path& out, bool exist_ok) {
  std::error_code ec;
  if (!std::filesystem::exists(out, ec)) {
    std::filesystem::create_directories(out, ec);
    if (ec) return ErrnoToStatus(ec.value(), "create folder", out);
    return Status::Ok();
  }
  if (!std::filesystem::is_directory(out, ec)) {
    return InvalidArgumentError(fmt::format("{}: exists and is not a folder", out.string()));
  }
  std::vector<std::filesystem::path> previous;
  bool other_files = false;
  for (const auto& entry : std::filesystem::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "index.json" || IsShardFileName(name)) {
      previous.push_back(entry.path());
    } else {
      other_files = true;
    }
  }
  if (ec) return ErrnoToStatus(ec.value(), "list folder", out);
  if ((previous.empty() && !other_files) || exist_ok) {
    for (const auto& p : previous) {
      std::filesystem::remove(p, ec);
      if (ec) return ErrnoToStatus(ec.value(), "remove", p);
    }
    return Status::Ok();
  }
  // "Directory is not empty" is the reference's wording, which scripts match on.
  return AlreadyExistsError(fmt::format(
      "Directory is not empty: {}; choose an empty folder or allow replacing the dataset in it",
      out.string()));
}

Result<std::optional<Compression>> PrepareWriter(const std::optional<std::string>& compression,
                                                 const std::vector<std::string>& hashes,
                                                 std::optional<uint64_t>& size_limit,
                                                 ShardConfig& config,
                                                 const std::filesystem::path& out, bool exist_ok) {
  std::optional<Compression> parsed;
  if (compression && !compression->empty()) {
    FERRY_ASSIGN_OR_RETURN(parsed, Compression::Parse(*compression));
    config.compression = compression;
  }
  FERRY_RETURN_IF_ERROR(ValidateHashNames(hashes));
  config.hashes = hashes;
  if (size_limit && *size_limit == 0) size_limit.reset();
  if (size_limit && *size_limit >= kMaxShardBytes) {
    return InvalidArgumentError(
        fmt::format("size_limit {} must be below 4 GiB (shard offsets are 32-bit)", *size_limit));
  }
  config.size_limit = size_limit;
  FERRY_RETURN_IF_ERROR(PrepareOutput(out, exist_ok));
  return parsed;
}

}  // namespace ferry::internal_format
