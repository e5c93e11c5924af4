// LoadIndex keeps a cache folder's index.json in step with its remote: fetched once, then
// revalidated with one HEAD per open; a folder filled from another remote refuses; a changed
// remote index replaces the copy and drops the shards it no longer describes; offline reads the
// copy without the remote; a prefix without index.json says how to read raw files.
#include "cache/cached_index.h"

#include "cache/shard_cache_fixture_testutil.h"
#include "format/binary_index.h"

namespace ferry::shard_cache_test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

int Heads(const fs::path& log, const std::string& key) {
  return testing::CountLogged(log, "head")[key];
}

class CachedIndexTest : public ShardCacheTest {
 protected:
  // Opens the dataset in the cache and fetches every shard.
  void FillCache() {
    auto store = Store();
    ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache()).has_value());
    auto cache = Open({}, store);
    for (size_t k = 0; k < index_.shards.size(); ++k) ASSERT_TRUE(cache->Acquire(k).has_value());
  }
};

TEST_F(CachedIndexTest, FetchedOnceThenRevalidatedWithOneHead) {
  WriteRemote();
  auto store = Store();
  auto loaded = LoadIndex(store.get(), prefix_, Cache());
  ASSERT_TRUE(loaded.has_value()) << loaded.status().ToString();
  EXPECT_EQ(loaded->shards.size(), index_.shards.size());
  EXPECT_EQ(testing::FileText(Cache() / "index.json"), testing::FileText(Remote() / "index.json"));
  EXPECT_EQ(Reads("index.json"), 1);
  EXPECT_EQ(Heads(ReadLog(), prefix_ + "/index.json"), 0) << "nothing cached to check: one GET";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache()).has_value());
  EXPECT_EQ(Reads("index.json"), 1) << "an unchanged index is not fetched again";
  EXPECT_EQ(Heads(ReadLog(), prefix_ + "/index.json"), 3);
  EXPECT_THAT(Temporaries(Cache()), IsEmpty());
  // Without a remote the folder's own index.json is read.
  auto local = LoadIndex(nullptr, "", Remote());
  ASSERT_TRUE(local.has_value()) << local.status().ToString();
  EXPECT_EQ(local->shards.size(), index_.shards.size());
}

// A store whose reads report no version (a MirrorStore's): the caller gives it instead.
TEST_F(CachedIndexTest, AVersionTheCallerKnowsIsUsedInsteadOfAHeadAndRecorded) {
  WriteRemote();
  auto store = Store();
  ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache(), {.index_version = "v1"}).has_value());
  EXPECT_EQ(Reads("index.json"), 1);
  auto origin = internal_cache::ReadCacheOrigin(internal_cache::CacheLayout(Cache()));
  ASSERT_TRUE(origin.ok() && origin->has_value());
  EXPECT_EQ((*origin)->index_version, "v1");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache(), {.index_version = "v1"}).has_value());
  }
  EXPECT_EQ(Reads("index.json"), 1) << "the same version reads the cached copy";
  EXPECT_EQ(Heads(ReadLog(), prefix_ + "/index.json"), 0) << "without asking the store";
  auto again = LoadIndex(store.get(), prefix_, Cache(), {.index_version = "v2"});
  ASSERT_TRUE(again.has_value()) << again.status().ToString();
  EXPECT_EQ(Reads("index.json"), 2) << "another version fetches it";
  origin = internal_cache::ReadCacheOrigin(internal_cache::CacheLayout(Cache()));
  ASSERT_TRUE(origin.ok() && origin->has_value());
  EXPECT_EQ((*origin)->index_version, "v2");
}

TEST_F(CachedIndexTest, AFolderFilledFromAnotherRemoteRefusesNamingBoth) {
  WriteRemote();
  testing::WriteDataset(Remote() / "other", {.samples = 12});
  auto store = Store();
  ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache()).has_value());
  auto other = LoadIndex(store.get(), prefix_ + "/other", Cache());
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.error().message(), HasSubstr(Cache().string()));
  EXPECT_THAT(other.error().message(), HasSubstr(store->ToUrl(prefix_ + "/other")));
  EXPECT_THAT(other.error().message(), HasSubstr(store->ToUrl(prefix_)));
  // Offline too: the record is local.
  EXPECT_FALSE(LoadIndex(store.get(), prefix_ + "/other", Cache(), {.offline = true}).has_value());
}

TEST_F(CachedIndexTest, AChangedRemoteIndexReplacesTheCopyAndDropsWhatItNoLongerDescribes) {
  WriteRemote({.samples = 42});  // eight full shards of five and one of two
  FillCache();
  const DatasetDescription before = index_;
  // The dataset is rewritten with more samples: the full shards stay the same, the last one of
  // before is rewritten, new ones appear.
  fs::remove_all(Remote());
  WriteRemote({.samples = 60});
  const DatasetDescription after = index_;
  const std::vector<std::string> gone = internal_cache::FilesNoLongerDescribed(before, after);
  ASSERT_EQ(gone, std::vector<std::string>{before.shards.back().raw_data.basename});

  auto store = Store();
  auto loaded = LoadIndex(store.get(), prefix_, Cache());
  ASSERT_TRUE(loaded.has_value()) << loaded.status().ToString();
  EXPECT_EQ(loaded->shards.size(), after.shards.size());
  EXPECT_EQ(testing::FileText(Cache() / "index.json"), testing::FileText(Remote() / "index.json"));
  EXPECT_FALSE(fs::exists(Cache() / gone[0])) << "a shard the new index describes otherwise";
  EXPECT_TRUE(fs::exists(Cache() / before.shards[0].raw_data.basename)) << "identical: kept";
  // What is read now is the new dataset's: the rewritten shard comes again, intact.
  auto cache = Open();
  const size_t last = before.shards.size() - 1;
  auto handle = cache->Acquire(last);
  ASSERT_TRUE(handle.has_value()) << handle.status().ToString();
  EXPECT_TRUE(testing::RawShardIsIntact(handle->path(), after.shards[last]));
}

TEST_F(CachedIndexTest, ShardsWithoutADigestInCommonCannotBeTrustedAndGo) {
  DatasetDescription before = WriteRemote({.hashes = {}});
  DatasetDescription after = before;
  EXPECT_EQ(internal_cache::FilesNoLongerDescribed(before, after).size(), before.shards.size());
  fs::remove_all(Remote());
  before = WriteRemote({.hashes = {"sha1"}});
  after = before;
  EXPECT_THAT(internal_cache::FilesNoLongerDescribed(before, after), IsEmpty());
  after.shards[1].raw_data.bytes += 1;
  EXPECT_EQ(internal_cache::FilesNoLongerDescribed(before, after),
            std::vector<std::string>{before.shards[1].raw_data.basename});
}

TEST_F(CachedIndexTest, ProcessesAfterTheFirstReadTheBinaryFormOfTheJsonTheyHave) {
  WriteRemote();
  auto store = Store();
  auto first = LoadIndex(store.get(), prefix_, Cache());
  ASSERT_TRUE(first.has_value()) << first.status().ToString();
  const fs::path binary = Cache() / ".ferry" / "index.bin";
  ASSERT_TRUE(fs::exists(binary)) << "the process that parsed the JSON leaves the binary form";
  const std::string json = testing::FileText(Cache() / "index.json");
  const auto source = internal_format::DescribeIndexSource(json);
  auto decoded = internal_format::DecodeBinaryIndex(testing::FileText(binary), source, "bin");
  ASSERT_TRUE(decoded.has_value()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, *first);
  EXPECT_EQ(*first, index_);

  // The next open takes the binary form: one that says something else of the same JSON is what
  // it returns (nothing a writer does; it shows which file was read).
  DatasetDescription marked = *first;
  marked.shards[0].samples += 1000;
  ASSERT_TRUE(WriteFileAtomically(binary, internal_format::EncodeBinaryIndex(marked, source)).ok());
  auto second = LoadIndex(store.get(), prefix_, Cache());
  ASSERT_TRUE(second.has_value()) << second.status().ToString();
  EXPECT_EQ(second->shards[0].samples, index_.shards[0].samples + 1000);
  auto offline = LoadIndex(store.get(), prefix_, Cache(), {.offline = true});
  ASSERT_TRUE(offline.has_value()) << offline.status().ToString();
  EXPECT_EQ(*offline, *second);

  // Cut short (a power cut: the cache does not fsync), it is parsed again from the JSON and
  // written whole.
  const std::string whole = internal_format::EncodeBinaryIndex(index_, source);
  ASSERT_TRUE(WriteFileAtomically(binary, whole.substr(0, whole.size() / 2)).ok());
  auto third = LoadIndex(store.get(), prefix_, Cache());
  ASSERT_TRUE(third.has_value()) << third.status().ToString();
  EXPECT_EQ(*third, index_);
  EXPECT_EQ(testing::FileText(binary), whole);

  // Of a JSON since replaced, the binary form is made again from the new one.
  fs::remove_all(Remote());
  WriteRemote({.samples = 60});
  auto changed = LoadIndex(store.get(), prefix_, Cache());
  ASSERT_TRUE(changed.has_value()) << changed.status().ToString();
  EXPECT_EQ(*changed, index_);
  const auto new_source =
      internal_format::DescribeIndexSource(testing::FileText(Cache() / "index.json"));
  auto redone = internal_format::DecodeBinaryIndex(testing::FileText(binary), new_source, "bin");
  ASSERT_TRUE(redone.has_value()) << redone.status().ToString();
  EXPECT_EQ(*redone, index_);
}

TEST_F(CachedIndexTest, ProcessesOpeningAnEmptyFolderAtOnceFetchTheIndexOnce) {
  // The ranks and workers of a node start together: one fetches and parses index.json, the
  // others wait for it on cache.lock and then find its copy (a HEAD each). Threads here: each
  // takes the lock through a descriptor of its own, as processes do.
  WriteRemote();
  auto store = Store({.chunk_bytes = 1024, .chunk_delay = std::chrono::milliseconds(50)});
  std::vector<Result<DatasetDescription>> loaded(4, DatasetDescription{});
  {
    std::vector<std::jthread> openers;
    for (size_t i = 0; i < loaded.size(); ++i) {
      openers.emplace_back([&, i] { loaded[i] = LoadIndex(store.get(), prefix_, Cache()); });
    }
  }
  for (const auto& l : loaded) {
    ASSERT_TRUE(l.has_value()) << l.status().ToString();
    EXPECT_EQ(*l, index_);
  }
  EXPECT_EQ(Reads("index.json"), 1) << "one GET for the node";
  EXPECT_LE(Heads(ReadLog(), prefix_ + "/index.json"), 3);
  // A prefix without a dataset leaves no cache folder behind.
  EXPECT_FALSE(LoadIndex(store.get(), prefix_ + "/nothing", Cache() / "none").has_value());
  EXPECT_FALSE(fs::exists(Cache() / "none"));
}

TEST_F(CachedIndexTest, AFolderFromBeforeTheRecordIsAdoptedWhenItMatches) {
  WriteRemote();
  FillCache();
  fs::remove(Cache() / ".ferry" / "origin.json");
  auto store = Store();
  ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache()).has_value());
  EXPECT_TRUE(fs::exists(Cache() / ".ferry" / "origin.json"));
  EXPECT_TRUE(fs::exists(Cache() / index_.shards[0].raw_data.basename)) << "same index: kept";
}

TEST_F(CachedIndexTest, OfflineReadsTheCopyWithoutTheRemote) {
  WriteRemote();
  auto store = Store();
  ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache()).has_value());
  auto unreachable = Store({.fail_head = [](std::string_view) {
    return UnavailableError("connection refused (injected)");
  }});
  auto failed = LoadIndex(unreachable.get(), prefix_, Cache());
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(failed.error().message(), HasSubstr("offline"));
  auto offline = LoadIndex(unreachable.get(), prefix_, Cache(), {.offline = true});
  ASSERT_TRUE(offline.has_value()) << offline.status().ToString();
  EXPECT_EQ(offline->shards.size(), index_.shards.size());
  // Offline with nothing cached says so.
  auto empty = LoadIndex(unreachable.get(), prefix_, Cache() / "empty", {.offline = true});
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().code(), StatusCode::kNotFound);
}

TEST_F(CachedIndexTest, ErrorsNameTheUrlAndAPrefixOfRawFilesSaysWhatToUse) {
  WriteRemote();
  auto store = Store();
  auto missing = LoadIndex(store.get(), prefix_ + "/nope", Cache() / "a");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.error().message(), HasSubstr("remote/nope"));
  EXPECT_THAT(missing.error().message(), HasSubstr("FileDataset"));
  EXPECT_THAT(missing.error().message(), HasSubstr("ferry convert"));

  fs::create_directories(Remote() / "broken");
  ASSERT_TRUE(WriteFileAtomically(Remote() / "broken" / "index.json", "{").ok());
  auto broken = LoadIndex(store.get(), prefix_ + "/broken", Cache() / "b");
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().code(), StatusCode::kDataLoss);
  EXPECT_THAT(broken.error().message(), HasSubstr("file:///"));
  EXPECT_THAT(broken.error().message(), HasSubstr("broken/index.json"));
  EXPECT_FALSE(fs::exists(Cache() / "b" / "index.json"));  // a broken index never lands
}

TEST_F(CachedIndexTest, AShardTheRemoteLostSaysWhy) {
  WriteRemote();
  auto store = Store();
  ASSERT_TRUE(LoadIndex(store.get(), prefix_, Cache()).has_value());
  fs::remove(Remote() / index_.shards[2].raw_data.basename);
  auto cache = Open({}, store);
  auto handle = cache->Acquire(2);
  ASSERT_FALSE(handle.has_value());
  EXPECT_EQ(handle.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(handle.error().message(), HasSubstr(index_.shards[2].raw_data.basename));
  EXPECT_THAT(handle.error().message(), HasSubstr("open it again"));
}

}  // namespace
}  // namespace ferry::shard_cache_test
