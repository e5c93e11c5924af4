// DatasetUploader against a real FileStore folder (the store every test binary has): what it
// uploads, in which order, what it leaves in the staging folder, and how a failure stops it.
#include "cli/dataset_uploader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "base/mutex.h"
#include "base/temp_dir_testutil.h"
#include "ferry/storage/registry.h"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A FileStore that notes the order of the writes it passes on.
class OrderNotingStore : public ObjectStore {
 public:
  explicit OrderNotingStore(std::shared_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}
  std::string_view scheme() const override { return inner_->scheme(); }
  std::string ToUrl(std::string_view key) const override { return inner_->ToUrl(key); }
  Result<ObjectInfo> Head(std::string_view key) override { return inner_->Head(key); }
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    return inner_->Read(key, range, sink);
  }
  Status Write(std::string_view key, const ByteSource& source) override {
    Status s = inner_->Write(key, source);
    MutexLock lock(mu_);
    if (s.ok()) written_.emplace_back(key.substr(key.rfind('/') + 1));
    return s;
  }
  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    return inner_->List(prefix, recursive);
  }
  Status Remove(std::string_view key) override { return inner_->Remove(key); }

  std::vector<std::string> written() const {
    MutexLock lock(mu_);
    return written_;
  }

 private:
  std::shared_ptr<ObjectStore> inner_;
  mutable Mutex mu_;
  std::vector<std::string> written_ GUARDED_BY(mu_);
};

class DatasetUploaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_ / "stage");
    fs::create_directories(tmp_ / "dest");
    auto opened = OpenUrl((tmp_ / "dest").string()).value();
    store_ = std::make_shared<OrderNotingStore>(opened.store);
    prefix_ = opened.key;
  }
  void Stage(const std::string& name, const std::string& data) {
    ASSERT_TRUE(WriteFileAtomically(tmp_ / "stage" / name, data).ok());
  }

  testing::TempDir tmp_;
  std::shared_ptr<OrderNotingStore> store_;
  std::string prefix_;
};

TEST_F(DatasetUploaderTest, UploadsEachShardAndTheIndexLastThenLeavesNothingStaged) {
  DatasetUploader uploader(store_, prefix_, tmp_ / "stage", {.concurrency = 3});
  for (int i = 0; i < 6; ++i) {
    const std::string name = "shard.0000" + std::to_string(i) + ".mds";
    Stage(name, std::string(100 + i, static_cast<char>('a' + i)));
    uploader.Add(name);
  }
  Stage("classes.json", "[\"a\"]");
  Stage("index.json", "{}");
  ASSERT_TRUE(uploader.Finish({"classes.json", "index.json"}).ok());
  const auto written = store_->written();
  ASSERT_EQ(written.size(), 8u);
  EXPECT_THAT(std::vector<std::string>(written.end() - 2, written.end()),
              ElementsAre("classes.json", "index.json"))
      << "the closing files come after every shard";
  EXPECT_EQ(ReadFileToString(tmp_ / "dest" / "shard.00003.mds").value(), std::string(103, 'd'));
  EXPECT_EQ(ReadFileToString(tmp_ / "dest" / "index.json").value(), "{}");
  EXPECT_TRUE(fs::is_empty(tmp_ / "stage"));
  EXPECT_EQ(uploader.files_uploaded(), 8u);
  EXPECT_EQ(uploader.bytes_uploaded(), 6u * 100 + 15 + 5 + 2);
}

TEST_F(DatasetUploaderTest, AFailedUploadNamesTheUrlStopsTheRestAndUploadsNoIndex) {
  // A folder where the shard must go: the store cannot write it.
  fs::create_directories(tmp_ / "dest" / "shard.00000.mds");
  DatasetUploader uploader(store_, prefix_, tmp_ / "stage",
                           {.concurrency = 1, .max_queued = 1, .keep_local = false});
  Stage("shard.00000.mds", "first");
  uploader.Add("shard.00000.mds");
  Stage("index.json", "{}");
  // Adds after the failure neither block (the queue holds one) nor upload.
  for (int i = 1; i < 10; ++i) {
    const std::string name = "shard.0000" + std::to_string(i) + ".mds";
    Stage(name, "x");
    uploader.Add(name);
  }
  const Status s = uploader.Finish({"index.json"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("uploading: "));
  EXPECT_THAT(s.message(), HasSubstr((tmp_ / "dest" / "shard.00000.mds").string()));
  EXPECT_FALSE(uploader.error().ok());
  EXPECT_FALSE(fs::exists(tmp_ / "dest" / "index.json")) << "no index naming a missing shard";
}

TEST_F(DatasetUploaderTest, RemovesOnlyTheShardsTheNewIndexDoesNotName) {
  for (const char* name : {"shard.00000.mds", "shard.00007.mds.zstd", "notes.txt"}) {
    ASSERT_TRUE(WriteFileAtomically(tmp_ / "dest" / name, "old").ok());
  }
  DatasetUploader uploader(store_, prefix_, tmp_ / "stage", {});
  ASSERT_TRUE(uploader.RemoveOtherShards({"shard.00000.mds"}).ok());
  EXPECT_TRUE(fs::exists(tmp_ / "dest" / "shard.00000.mds"));
  EXPECT_FALSE(fs::exists(tmp_ / "dest" / "shard.00007.mds.zstd"));
  EXPECT_TRUE(fs::exists(tmp_ / "dest" / "notes.txt")) << "not a dataset file";
}

}  // namespace
}  // namespace ferry::cli
