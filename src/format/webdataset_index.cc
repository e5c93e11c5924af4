#include "format/webdataset_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

#include "base/mapped_file.h"
#include "ferry/format/index.h"
#include "format/compression.h"
#include "format/webdataset_samples.h"

namespace ferry::internal_format {
namespace {

using Json = nlohmann::json;

Json ParseObject(std::string_view text) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() ? doc : Json();
}

}  // namespace

bool IsTarShardName(std::string_view name) {
  return name.ends_with(".tar") || TarOfGzip(name).has_value();
}

std::optional<std::string> TarOfGzip(std::string_view name) {
  if (name.ends_with(".tar.gz")) return std::string(name.substr(0, name.size() - 3));
  if (name.ends_with(".tgz")) return std::string(name.substr(0, name.size() - 4)) + ".tar";
  return std::nullopt;
}

ShardDescription DescribeWebDatasetShard(const std::string& url, uint64_t filesize,
                                         std::optional<uint64_t> raw_filesize, uint64_t samples) {
  // One config for every plain tar, one for every gzipped one: descriptions share them.
  static const auto plain = std::make_shared<const ShardConfig>();
  static const auto gzipped =
      std::make_shared<const ShardConfig>(ShardConfig{.column_names = {},
                                                      .column_encodings = {},
                                                      .column_sizes = {},
                                                      .compression = "gz",
                                                      .hashes = {},
                                                      .size_limit = std::nullopt});
  const std::optional<std::string> tar = TarOfGzip(url);
  if (!tar) {
    return {.config = plain,
            .raw_data = {.basename = url, .bytes = filesize},
            .samples = samples,
            .format = "webdataset"};
  }
  // The cache fetches the compressed file and keeps the tar inside, which it sizes first.
  return {.config = gzipped,
          .raw_data = {.basename = *tar, .bytes = raw_filesize.value_or(0)},
          .zip_data = FileInfo{.basename = url, .bytes = filesize},
          .samples = samples,
          .format = "webdataset"};
}

Result<TarShardCount> CountTarSamples(std::string_view bytes, bool gzipped, std::string_view url) {
  std::string tar;
  if (gzipped) {
    FERRY_ASSIGN_OR_RETURN(const Compression gz, Compression::Parse("gz"));
    auto inflated = gz.Decompress(bytes, uint64_t{1} << 40);
    if (!inflated) return inflated.error().WithContext(url);
    tar = std::move(*inflated);
    bytes = tar;
  }
  FERRY_ASSIGN_OR_RETURN(const std::vector<WebDatasetSample> samples,
                         ReadWebDatasetSamples(bytes, url));
  return TarShardCount{.samples = samples.size(), .tar_bytes = bytes.size()};
}

Result<TarShardCount> CountTarFile(const std::filesystem::path& path, bool gzipped,
                                   std::string_view url) {
  FERRY_ASSIGN_OR_RETURN(const MappedFile file, MappedFile::Open(path));
  return CountTarSamples(file.data(), gzipped, url);
}

Result<std::optional<DatasetDescription>> CountLocalTarShards(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (IsTarShardName(name) && it->is_regular_file(ec)) names.push_back(std::move(name));
  }
  if (ec) {
    return UnavailableError(fmt::format("{}: cannot list it: {}", folder.string(), ec.message()));
  }
  if (names.empty()) return std::optional<DatasetDescription>();
  std::sort(names.begin(), names.end());
  DatasetDescription description;
  for (const std::string& name : names) {
    const std::filesystem::path path = folder / name;
    const bool gzipped = TarOfGzip(name).has_value();
    FERRY_ASSIGN_OR_RETURN(const TarShardCount count, CountTarFile(path, gzipped, path.string()));
    std::error_code size_error;
    const uint64_t filesize = std::filesystem::file_size(path, size_error);
    if (size_error) {
      return UnavailableError(fmt::format("{}: {}", path.string(), size_error.message()));
    }
    std::optional<uint64_t> raw_filesize;
    if (gzipped) raw_filesize = count.tar_bytes;
    description.shards.push_back(
        DescribeWebDatasetShard(name, filesize, raw_filesize, count.samples));
  }
  return std::optional<DatasetDescription>(std::move(description));
}

bool IsWebDatasetIndex(std::string_view text) {
  // Cheap first: an MDS index.json never says "__kind__".
  if (text.find("__kind__") == std::string_view::npos) return false;
  const Json doc = ParseObject(text);
  return doc.is_object() && doc.contains("__kind__") && doc["__kind__"] == kWebDatasetIndexKind;
}

Result<DatasetDescription> ParseWebDatasetIndex(std::string_view text, std::string_view origin) {
  const Json doc = ParseObject(text);
  if (!doc.is_object()) {
    return DataLossError(fmt::format("{}: not a JSON object", origin));
  }
  if (!doc.contains("__kind__") || doc["__kind__"] != kWebDatasetIndexKind) {
    return DataLossError(fmt::format("{}: '__kind__' is not \"{}\"", origin, kWebDatasetIndexKind));
  }
  if (doc.contains("base_path")) {
    return InvalidArgumentError(fmt::format(
        "{}: 'base_path' puts the shards elsewhere; ferry reads the shards beside the index "
        "(its urls relative to it)",
        origin));
  }
  if (!doc.contains("shardlist") || !doc["shardlist"].is_array()) {
    return DataLossError(fmt::format("{}: 'shardlist' is missing or not a list", origin));
  }
  DatasetDescription description;
  const Json& list = doc["shardlist"];
  for (size_t k = 0; k < list.size(); ++k) {
    const Json& entry = list[k];
    auto bad = [&](std::string_view what) {
      return DataLossError(fmt::format("{}: shard {}: {}", origin, k, what));
    };
    if (!entry.is_object()) return bad("not an object");
    if (!entry.contains("url") || !entry["url"].is_string()) return bad("'url' is not a string");
    const std::string url = entry["url"];
    if (url.find("://") != std::string::npos) {
      return InvalidArgumentError(fmt::format(
          "{}: shard {}: '{}' is elsewhere; ferry reads the shards beside the index (urls "
          "relative to it)",
          origin, k, url));
    }
    if (Status safe = ValidateBasename(url); !safe.ok()) {
      return safe.WithContext(fmt::format("{}: shard {}", origin, k));
    }
    if (!entry.contains("nsamples") || !entry["nsamples"].is_number_unsigned()) {
      return bad("'nsamples' is not a count");
    }
    if (!entry.contains("filesize")) {
      return InvalidArgumentError(fmt::format(
          "{}: shard {} ('{}') has no 'filesize'; `ferry index` writes a shard list with sizes",
          origin, k, url));
    }
    if (!entry["filesize"].is_number_unsigned()) return bad("'filesize' is not a byte count");
    std::optional<uint64_t> raw_filesize;
    if (TarOfGzip(url) && !entry.contains("raw_filesize")) {
      return InvalidArgumentError(fmt::format(
          "{}: shard {} ('{}') has no 'raw_filesize' (the size of the tar inside); `ferry "
          "index` writes it",
          origin, k, url));
    }
    if (TarOfGzip(url)) {
      if (!entry["raw_filesize"].is_number_unsigned()) {
        return bad("'raw_filesize' is not a byte count");
      }
      raw_filesize = entry["raw_filesize"].get<uint64_t>();
    }
    description.shards.push_back(
        DescribeWebDatasetShard(url, entry["filesize"], raw_filesize, entry["nsamples"]));
  }
  return description;
}

std::string SerializeWebDatasetIndex(const DatasetDescription& description) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ShardDescription& shard : description.shards) {
    if (shard.zip_data) {
      list.push_back({{"url", shard.zip_data->basename},
                      {"nsamples", shard.samples},
                      {"filesize", shard.zip_data->bytes},
                      {"raw_filesize", shard.raw_data.bytes}});
    } else {
      list.push_back({{"url", shard.raw_data.basename},
                      {"nsamples", shard.samples},
                      {"filesize", shard.raw_data.bytes}});
    }
  }
  const nlohmann::ordered_json doc = {
      {"__kind__", kWebDatasetIndexKind}, {"wids_version", 1}, {"shardlist", std::move(list)}};
  return doc.dump(1) + "\n";
}

}  // namespace ferry::internal_format
