#include "files/file_listing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "ferry/storage/registry.h"

namespace ferry::internal_files {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void Put(const std::filesystem::path& path, const std::string& data) {
  std::filesystem::create_directories(path.parent_path());
  ASSERT_TRUE(WriteFileAtomically(path, data).ok());
}

TEST(FileListing, ListsFilteredSortedWithFolderLabels) {
  ferry::testing::TempDir tmp;
  const auto root = tmp / "images";
  Put(root / "dog/b.JPG", "bb");
  Put(root / "dog/a.jpg", "a");
  Put(root / "cat/x/deep.jpeg", "ccc");
  Put(root / "cat/notes.txt", "skip me");
  Put(root / "stray.jpg", "no class");
  auto opened = OpenUrl(root.string()).value();
  auto listing = ListFiles(*opened.store, opened.key, root.string(), FileLabels::kFolder,
                           NormalizeExtensions({"jpg", ".JPEG"}).value())
                     .value();
  EXPECT_THAT(listing.classes, ElementsAre("cat", "dog"));
  ASSERT_EQ(listing.files.size(), 3u);
  EXPECT_EQ(listing.files[0].path, "cat/x/deep.jpeg");
  EXPECT_EQ(listing.files[0].label, 0);
  EXPECT_EQ(listing.files[0].size, 3u);
  EXPECT_EQ(listing.files[1].path, "dog/a.jpg");
  EXPECT_EQ(listing.files[2].path, "dog/b.JPG");
  EXPECT_EQ(listing.files[2].label, 1);
  EXPECT_FALSE(listing.files[2].etag.empty()) << "local files carry their mtime as a version";

  // Without labels and filters: every file, root-level ones too.
  auto all = ListFiles(*opened.store, opened.key, root.string(), FileLabels::kNone, {}).value();
  EXPECT_EQ(all.files.size(), 5u);
  EXPECT_TRUE(all.classes.empty());
  EXPECT_EQ(all.files[0].label, -1);
}

TEST(FileListing, RoundTripsAndDetectsChanges) {
  Listing a{
      .root = "s3://b/p",
      .labels = FileLabels::kFolder,
      .extensions = {".jpg"},
      .listed_at_s = 1700000000,
      .classes = {"c0", "c1"},
      .files = {{"c0/a.jpg", 10, "e1", 0}, {"c1/b.jpg", 20, "e2", 1}, {"c1/c.jpg", 5, "", 1}}};
  auto back = ParseListing(SerializeListing(a), "test").value();
  EXPECT_EQ(back.files, a.files);
  EXPECT_EQ(back.classes, a.classes);
  EXPECT_EQ(back.listed_at_s, a.listed_at_s);
  EXPECT_TRUE(SameQuery(back, "s3://b/p", FileLabels::kFolder, {".jpg"}));
  EXPECT_FALSE(SameQuery(back, "s3://b/p", FileLabels::kNone, {".jpg"}));
  EXPECT_FALSE(SameQuery(back, "s3://b/p", FileLabels::kFolder, {}));

  Listing b = a;
  b.files[0].etag = "e1-new";  // same size, new etag
  b.files.erase(b.files.begin() + 2);
  b.files.push_back({"c1/d.jpg", 1, "e4", 1});  // new files are not "changed"
  EXPECT_THAT(ChangedFiles(a, b), ElementsAre("c0/a.jpg", "c1/c.jpg"));
}

TEST(FileListing, RejectsHostileKeysAndBrokenText) {
  Listing bad{.root = "r", .files = {{"../escape", 1, "", -1}}};
  auto parsed = ParseListing(SerializeListing(bad), "listing.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message(), HasSubstr(".."));
  auto garbage = ParseListing("{\"version\": 1}", "/cache/.ferry/listing.json");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(garbage.error().message(), HasSubstr("/cache/.ferry/listing.json"));
  EXPECT_FALSE(NormalizeExtensions({""}).ok());
  EXPECT_THAT(NormalizeExtensions({"PNG", ".png", "jpg"}).value(), ElementsAre(".jpg", ".png"));
}

}  // namespace
}  // namespace ferry::internal_files
