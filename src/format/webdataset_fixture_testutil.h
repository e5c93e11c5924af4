// The WebDataset fixtures (written by WebDataset's TarWriter, GNU tar and Python's tarfile; see
// ../shared/fixtures/README.md) and what WebDataset itself read from them (expected.json), for
// the tests that check ferry reads the same. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "format/compression.h"
#include "format/fixture_testutil.h"

namespace ferry::testing {

/// The WebDataset fixtures sit beside the MDS ones (FERRY_FIXTURES_DIR names the MDS folder).
inline std::filesystem::path WebDatasetFixtures() {
  return FixturesDir().parent_path() / "webdataset";
}

/// A shard's tar bytes: gunzipped when it is a .tar.gz.
inline std::string TarBytes(const std::filesystem::path& shard) {
  std::string bytes = FileText(shard);
  if (!shard.string().ends_with(".gz")) return bytes;
  auto tar = Compression::Parse("gz").value().Decompress(bytes, uint64_t{1} << 30);
  EXPECT_TRUE(tar.ok()) << tar.status().ToString();
  return tar.value_or("");
}

/// One sample as WebDataset read it: its key, and per field its size and sha256.
struct ExpectedWebDatasetSample {
  std::string key;
  std::map<std::string, std::pair<uint64_t, std::string>> fields;
};

/// Per shard of fixture `name` (in order), its file name and its samples as WebDataset read them.
inline std::vector<std::pair<std::string, std::vector<ExpectedWebDatasetSample>>>
ExpectedWebDatasetShards(const std::string& name) {
  const auto doc = nlohmann::json::parse(FileText(WebDatasetFixtures() / name / "expected.json"));
  std::vector<std::pair<std::string, std::vector<ExpectedWebDatasetSample>>> shards;
  for (const auto& shard : doc["shards"]) {
    auto& [file, samples] =
        shards.emplace_back(shard["shard"], std::vector<ExpectedWebDatasetSample>{});
    for (const auto& s : shard["samples"]) {
      ExpectedWebDatasetSample& sample = samples.emplace_back();
      sample.key = s["__key__"];
      for (const auto& [field, info] : s["fields"].items()) {
        sample.fields[field] = {info["bytes"].get<uint64_t>(), info["sha256"].get<std::string>()};
      }
    }
  }
  EXPECT_FALSE(shards.empty()) << name;
  return shards;
}

}  // namespace ferry::testing
