// Tests of MergeIndexFiles / MergeIndexUnder (spec §10): both forms give the same bytes, the
// prefix is the immediate parent folder, duplicates are dropped, an existing index is never
// overwritten, and a broken part is named before anything is written.
#include "ferry/format/merge_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/format/index.h"
#include "ferry/format/local_dataset.h"
#include "format/fixture_testutil.h"

namespace ferry {
namespace {

using testing::FileText;

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using testing::kFixtures;

// Copies the two parts of the merged fixture (their index.json and shard files) under `root`,
// as `root`/<name_a> and `root`/<name_b>.
void CopyParts(const fs::path& root, const std::string& name_a = "part_a",
               const std::string& name_b = "part_b") {
  for (const auto& [from, to] :
       {std::pair{std::string("part_a"), name_a}, std::pair{std::string("part_b"), name_b}}) {
    fs::create_directories(root / to);
    fs::copy(kFixtures / "merged" / from, root / to,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    for (const auto& entry : fs::recursive_directory_iterator(root / to)) {
      fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
    }
  }
}

DatasetDescription ParseOk(const fs::path& path) {
  auto index = ParseIndex(FileText(path), path.string());
  EXPECT_TRUE(index.has_value()) << index.status().ToString();
  return index.value_or(DatasetDescription{});
}

TEST(MergeIndex, ListFormAndRootFormProduceTheSameBytes) {
  testing::TempDir list_root, walk_root;
  CopyParts(list_root.path());
  CopyParts(walk_root.path());
  auto listed = MergeIndexFiles(
      {list_root / "part_a" / "index.json", list_root / "part_b" / "index.json"}, list_root.path());
  ASSERT_TRUE(listed.has_value()) << listed.status().ToString();
  EXPECT_EQ(*listed, 6u);
  auto walked = MergeIndexUnder(walk_root.path());
  ASSERT_TRUE(walked.has_value()) << walked.status().ToString();
  EXPECT_EQ(*walked, 6u);

  const std::string a = FileText(list_root / "index.json");
  const std::string b = FileText(walk_root / "index.json");
  EXPECT_EQ(a, b);
  // The reference's form: version first, no trailing newline, prefixed basenames.
  EXPECT_EQ(a.substr(0, 27), R"({"version": 2, "shards": [{)");
  EXPECT_EQ(a.back(), '}');
  EXPECT_THAT(a, HasSubstr(R"("basename": "part_a/shard.00000.mds")"));
  EXPECT_THAT(a, HasSubstr(R"("basename": "part_b/shard.00002.mds.zstd")"));
  // Everything else of each shard is unchanged.
  const DatasetDescription merged = ParseOk(list_root / "index.json");
  const DatasetDescription part_a = ParseOk(list_root / "part_a" / "index.json");
  const DatasetDescription part_b = ParseOk(list_root / "part_b" / "index.json");
  ASSERT_EQ(merged.shards.size(), part_a.shards.size() + part_b.shards.size());
  for (size_t k = 0; k < merged.shards.size(); ++k) {
    const bool in_a = k < part_a.shards.size();
    const ShardDescription& orig =
        in_a ? part_a.shards[k] : part_b.shards[k - part_a.shards.size()];
    const ShardDescription& got = merged.shards[k];
    const std::string prefix = in_a ? "part_a/" : "part_b/";
    EXPECT_EQ(got.samples, orig.samples);
    EXPECT_EQ(*got.config, *orig.config);
    EXPECT_EQ(got.raw_data.basename, prefix + orig.raw_data.basename);
    EXPECT_EQ(got.raw_data.bytes, orig.raw_data.bytes);
    EXPECT_EQ(got.raw_data.hashes, orig.raw_data.hashes);
    EXPECT_EQ(got.zip_data.has_value(), orig.zip_data.has_value());
    if (got.zip_data && orig.zip_data) {
      EXPECT_EQ(got.zip_data->basename, prefix + orig.zip_data->basename);
      EXPECT_EQ(got.zip_data->hashes, orig.zip_data->hashes);
    }
  }
  // The merged dataset reads: raw shards of part_a, compressed shards of part_b.
  auto ds = LocalDataset::Open(list_root.path());
  ASSERT_TRUE(ds.has_value()) << ds.status().ToString();
  EXPECT_EQ((*ds)->num_samples(), 45u);
  for (uint64_t i = 0; i < 45; ++i) {
    auto v = (*ds)->Get(i);
    ASSERT_TRUE(v.has_value()) << i << ": " << v.status().ToString();
  }
}

TEST(MergeIndex, ListOrderIsKeptAndRootFormSortsByPath) {
  testing::TempDir tmp;
  CopyParts(tmp.path(), "b_first", "a_second");  // part_a's shards live in "b_first"
  auto listed = MergeIndexFiles({tmp / "b_first" / "index.json", tmp / "a_second" / "index.json"},
                                tmp.path());
  ASSERT_TRUE(listed.has_value()) << listed.status().ToString();
  const DatasetDescription by_list = ParseOk(tmp / "index.json");
  EXPECT_EQ(by_list.shards.front().raw_data.basename, "b_first/shard.00000.mds");
  fs::remove(tmp / "index.json");

  ASSERT_TRUE(MergeIndexUnder(tmp.path()).has_value());
  const DatasetDescription by_walk = ParseOk(tmp / "index.json");
  ASSERT_EQ(by_walk.shards.size(), 6u);
  EXPECT_EQ(by_walk.shards.front().raw_data.basename, "a_second/shard.00000.mds");
  EXPECT_EQ(by_walk.shards.back().raw_data.basename, "b_first/shard.00002.mds");
}

TEST(MergeIndex, PrefixIsOnlyTheImmediateParentFolder) {
  testing::TempDir tmp;
  fs::create_directories(tmp / "deep" / "er");
  CopyParts(tmp / "deep" / "er", "leaf_a", "leaf_b");
  auto walked = MergeIndexUnder(tmp.path());
  ASSERT_TRUE(walked.has_value()) << walked.status().ToString();
  const DatasetDescription merged = ParseOk(tmp / "index.json");
  ASSERT_EQ(merged.shards.size(), 6u);
  EXPECT_EQ(merged.shards[0].raw_data.basename, "leaf_a/shard.00000.mds");
  EXPECT_EQ(merged.shards[3].zip_data->basename, "leaf_b/shard.00000.mds.zstd");
  EXPECT_THAT(FileText(tmp / "index.json"), ::testing::Not(HasSubstr("deep/")));

  testing::TempDir list;
  CopyParts(list / "x" / "y");
  ASSERT_TRUE(
      MergeIndexFiles({list / "x" / "y" / "part_a" / "index.json"}, list.path()).has_value());
  EXPECT_EQ(ParseOk(list / "index.json").shards[0].raw_data.basename, "part_a/shard.00000.mds");
}

TEST(MergeIndex, DuplicatesInTheListAreDropped) {
  testing::TempDir tmp;
  CopyParts(tmp.path());
  const fs::path a = tmp / "part_a" / "index.json";
  const fs::path b = tmp / "part_b" / "index.json";
  auto merged = MergeIndexFiles({a, b, a, tmp / "part_b" / "." / "index.json",
                                 tmp / "part_a" / ".." / "part_a" / "index.json", b},
                                tmp.path());
  ASSERT_TRUE(merged.has_value()) << merged.status().ToString();
  EXPECT_EQ(*merged, 6u);
  const DatasetDescription index = ParseOk(tmp / "index.json");
  ASSERT_EQ(index.shards.size(), 6u);
  EXPECT_EQ(index.shards[0].raw_data.basename, "part_a/shard.00000.mds");
  EXPECT_EQ(index.shards[3].raw_data.basename, "part_b/shard.00000.mds");
}

TEST(MergeIndex, ExistingOutputIsNeverOverwritten) {
  testing::TempDir tmp;
  CopyParts(tmp.path());
  ASSERT_TRUE(WriteFileAtomically(tmp / "index.json", "keep").ok());
  auto listed = MergeIndexFiles({tmp / "part_a" / "index.json"}, tmp.path());
  ASSERT_FALSE(listed.has_value());
  EXPECT_EQ(listed.error().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(listed.error().message(), HasSubstr((tmp / "index.json").string()));
  auto walked = MergeIndexUnder(tmp.path());
  ASSERT_FALSE(walked.has_value());
  EXPECT_EQ(walked.error().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(FileText(tmp / "index.json"), "keep");
}

TEST(MergeIndex, ABrokenPartIsNamedAndNothingIsWritten) {
  struct Case {
    const char* text;
    StatusCode code;
  };
  for (const Case& c :
       {Case{"{ not json", StatusCode::kDataLoss},
        Case{R"({"shards": [], "version": 3})", StatusCode::kInvalidArgument},
        Case{R"({"shards": [{"samples": 1}], "version": 2})", StatusCode::kDataLoss}}) {
    SCOPED_TRACE(c.text);
    testing::TempDir tmp;
    CopyParts(tmp.path());
    const fs::path broken = tmp / "part_b" / "index.json";
    ASSERT_TRUE(WriteFileAtomically(broken, c.text).ok());
    auto listed = MergeIndexFiles({tmp / "part_a" / "index.json", broken}, tmp.path());
    ASSERT_FALSE(listed.has_value());
    EXPECT_EQ(listed.error().code(), c.code);
    EXPECT_THAT(listed.error().message(), HasSubstr(broken.string()));
    EXPECT_FALSE(fs::exists(tmp / "index.json"));
    auto walked = MergeIndexUnder(tmp.path());
    ASSERT_FALSE(walked.has_value());
    EXPECT_EQ(walked.error().code(), c.code);
    EXPECT_THAT(walked.error().message(), HasSubstr(broken.string()));
    EXPECT_FALSE(fs::exists(tmp / "index.json"));
  }
  // A part that does not exist.
  testing::TempDir tmp;
  CopyParts(tmp.path());
  auto missing =
      MergeIndexFiles({tmp / "part_a" / "index.json", tmp / "part_c" / "index.json"}, tmp.path());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr((tmp / "part_c" / "index.json").string()));
  EXPECT_FALSE(fs::exists(tmp / "index.json"));
}

TEST(MergeIndex, RootWithoutSubIndexes) {
  testing::TempDir tmp;
  auto empty = MergeIndexUnder(tmp.path());
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(empty.error().message(), HasSubstr(tmp.path().string()));

  // Other JSON files below the root are not sub-indexes (unlike the reference's *.json walk).
  fs::create_directories(tmp / "part");
  ASSERT_TRUE(WriteFileAtomically(tmp / "part" / "expected.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomically(tmp / "part" / "notes.txt", "").ok());
  auto others = MergeIndexUnder(tmp.path());
  ASSERT_FALSE(others.has_value());
  EXPECT_EQ(others.error().code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(tmp / "index.json"));

  auto not_a_folder = MergeIndexUnder(tmp / "part" / "notes.txt");
  ASSERT_FALSE(not_a_folder.has_value());
  EXPECT_EQ(not_a_folder.error().code(), StatusCode::kInvalidArgument);

  // A root that is not there is not found (it used to be "not a folder", a bad argument).
  auto missing = MergeIndexUnder(tmp / "no-such-dir");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("no-such-dir does not exist"));
}

TEST(MergeIndex, PartsMergeFromTextsAsFromFiles) {
  testing::TempDir tmp;
  CopyParts(tmp.path());
  ASSERT_EQ(MergeIndexUnder(tmp.path()).value(), 6u);
  std::vector<IndexPart> parts;
  for (const char* name : {"part_a", "part_b"}) {
    parts.push_back({name, name, FileText(tmp / name / "index.json")});
  }
  auto merged = MergeIndexParts(parts);
  ASSERT_TRUE(merged.has_value()) << merged.status().ToString();
  EXPECT_EQ(merged->shards, 6u);
  EXPECT_EQ(merged->text, FileText(tmp / "index.json"));
  EXPECT_EQ(merged->text, FileText(kFixtures / "merged" / "index.json"));

  parts[1].text = "{";
  auto broken = MergeIndexParts(parts);
  ASSERT_FALSE(broken.has_value());
  EXPECT_THAT(broken.error().message(), HasSubstr("part_b"));
}

TEST(MergeIndex, RootFormIgnoresUnrelatedJsonAndTheRootIndexItself) {
  testing::TempDir tmp;
  CopyParts(tmp.path());
  ASSERT_TRUE(WriteFileAtomically(tmp / "part_a" / "stats.json", R"({"not": "an index"})").ok());
  auto walked = MergeIndexUnder(tmp.path());
  ASSERT_TRUE(walked.has_value()) << walked.status().ToString();
  EXPECT_EQ(*walked, 6u);
  // A trailing slash names the same root.
  fs::remove(tmp / "index.json");
  auto slashed = MergeIndexUnder(tmp.path().string() + "/");
  ASSERT_TRUE(slashed.has_value()) << slashed.status().ToString();
  EXPECT_EQ(*slashed, 6u);
  EXPECT_EQ(ParseOk(tmp / "index.json").shards[0].raw_data.basename, "part_a/shard.00000.mds");
}

}  // namespace
}  // namespace ferry
