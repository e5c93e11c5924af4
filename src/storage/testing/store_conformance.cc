#include "storage/testing/store_conformance.h"

#include <gmock/gmock.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "base/file_util.h"
#include "base/hex.h"
#include "base/temp_dir_testutil.h"

namespace ferry::testing {

using ::testing::HasSubstr;

std::string StoreUnderTestName(const ::testing::TestParamInfo<StoreUnderTest>& info) {
  return info.param.name;
}

std::string TestBytes(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, size - i));
  }
  return s;
}

void StoreConformanceTest::SetUp() {
  auto opened = GetParam().open();
  ASSERT_TRUE(opened.has_value()) << opened.status().ToString();
  store_ = opened->store;
  prefix_ = opened->key;
  if (!prefix_.empty() && !prefix_.ends_with('/')) prefix_ += '/';
}

void StoreConformanceTest::TearDown() {
  if (!store_) return;
  auto listing = store_->List(prefix_, true);
  if (!listing) return;
  for (const auto& obj : listing->objects) (void)store_->Remove(obj.key);
}

TEST_P(StoreConformanceTest, PutGetRoundTripsAtSeveralSizes) {
  for (size_t size : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
    const std::string data = TestBytes(size, size);
    const std::string key = Key("sizes/" + std::to_string(size));
    ASSERT_TRUE(store_->Put(key, data).ok()) << size;
    auto got = store_->Get(key);
    ASSERT_TRUE(got.has_value()) << got.status().ToString();
    EXPECT_EQ(got->size(), size);
    EXPECT_TRUE(*got == data) << "content differs at size " << size;
    auto info = store_->Head(key);
    ASSERT_TRUE(info.has_value()) << info.status().ToString();
    EXPECT_EQ(info->size, size);
  }
}

TEST_P(StoreConformanceTest, ZeroByteObjects) {
  const std::string key = Key("empty");
  ASSERT_TRUE(store_->Put(key, "").ok());
  auto got = store_->Get(key);
  ASSERT_TRUE(got.has_value()) << got.status().ToString();
  EXPECT_TRUE(got->empty());
  EXPECT_EQ(store_->Head(key)->size, 0u);
}

TEST_P(StoreConformanceTest, OverwriteReplaces) {
  const std::string key = Key("over");
  ASSERT_TRUE(store_->Put(key, "first version, longer").ok());
  ASSERT_TRUE(store_->Put(key, "second").ok());
  EXPECT_EQ(store_->Get(key).value(), "second");
  EXPECT_EQ(store_->Head(key)->size, 6u);
}

TEST_P(StoreConformanceTest, RangedReadsAtTheEdges) {
  const std::string data = TestBytes(10000, 7);
  const std::string key = Key("ranges");
  ASSERT_TRUE(store_->Put(key, data).ok());
  auto range = [&](uint64_t offset, uint64_t length) {
    auto r = store_->GetRange(key, offset, length);
    EXPECT_TRUE(r.has_value()) << offset << "+" << length << ": " << r.status().ToString();
    return r.value_or("<error>");
  };
  EXPECT_EQ(range(0, 1), data.substr(0, 1));
  EXPECT_EQ(range(9999, 1), data.substr(9999, 1));
  EXPECT_EQ(range(0, 10000), data);
  EXPECT_EQ(range(1234, 5000), data.substr(1234, 5000));
  EXPECT_EQ(range(9000, 5000), data.substr(9000));  // past the end: what there is
  EXPECT_EQ(range(5000, 0), "");
  auto past = store_->GetRange(key, 20000, 10);
  ASSERT_FALSE(past.has_value());
  EXPECT_EQ(past.error().code(), StatusCode::kOutOfRange) << past.error().ToString();
  // Read with a sink, from an offset to the end.
  std::string tail;
  auto info = store_->Read(key, ByteRange{9990, std::nullopt}, [&](std::string_view c) {
    tail.append(c);
    return Status::Ok();
  });
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(tail, data.substr(9990));
  EXPECT_EQ(info->size, 10000u);
}

TEST_P(StoreConformanceTest, MissingObjectsAreNotFoundNamingTheUrl) {
  const std::string key = Key("no/such/object");
  auto head = store_->Head(key);
  ASSERT_FALSE(head.has_value());
  EXPECT_EQ(head.error().code(), StatusCode::kNotFound) << head.error().ToString();
  auto get = store_->Get(key);
  ASSERT_FALSE(get.has_value());
  EXPECT_EQ(get.error().code(), StatusCode::kNotFound) << get.error().ToString();
  EXPECT_THAT(get.error().message(), HasSubstr("no/such/object"));
  EXPECT_TRUE(store_->Remove(key).ok());  // removing what is not there is fine
}

TEST_P(StoreConformanceTest, KeysWithSpacesAndNonAsciiCharacters) {
  const std::vector<std::string> names = {"with space/file name.txt",
                                          "unicode/caf\xc3\xa9 \xe5\x90\x8d\xe5\x89\x8d.bin",
                                          "symbols/a+b=c~d@e,f;g.txt",
                                          "percent/100%.txt",
                                          "hash/a#b",
                                          "question/a?b"};
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string key = Key(names[i]);
    ASSERT_TRUE(store_->Put(key, "payload " + std::to_string(i)).ok()) << names[i];
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string key = Key(names[i]);
    auto got = store_->Get(key);
    ASSERT_TRUE(got.has_value()) << names[i] << ": " << got.status().ToString();
    EXPECT_EQ(*got, "payload " + std::to_string(i));
  }
  auto listing = store_->List(prefix_, true);
  ASSERT_TRUE(listing.has_value()) << listing.status().ToString();
  std::vector<std::string> listed;
  for (const auto& obj : listing->objects) listed.push_back(obj.key.substr(prefix_.size()));
  std::vector<std::string> want = names;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(listed, want);
}

TEST_P(StoreConformanceTest, ListsRecursivelyAndOneLevel) {
  for (const char* name : {"tree/a", "tree/b/c", "tree/b/d/e", "tree/f", "treetop"}) {
    ASSERT_TRUE(store_->Put(Key(name), name).ok());
  }
  auto all = store_->List(Key("tree/"), true);
  ASSERT_TRUE(all.has_value()) << all.status().ToString();
  std::vector<std::string> keys;
  for (const auto& obj : all->objects) keys.push_back(obj.key.substr(prefix_.size()));
  EXPECT_EQ(keys, (std::vector<std::string>{"tree/a", "tree/b/c", "tree/b/d/e", "tree/f"}));
  EXPECT_TRUE(all->prefixes.empty());
  EXPECT_EQ(all->objects[0].size, 6u);

  auto level = store_->List(Key("tree/"), false);
  ASSERT_TRUE(level.has_value()) << level.status().ToString();
  keys.clear();
  for (const auto& obj : level->objects) keys.push_back(obj.key.substr(prefix_.size()));
  EXPECT_EQ(keys, (std::vector<std::string>{"tree/a", "tree/f"}));
  std::vector<std::string> dirs;
  for (const auto& p : level->prefixes) dirs.push_back(p.substr(prefix_.size()));
  EXPECT_EQ(dirs, (std::vector<std::string>{"tree/b/"}));

  // A string prefix, as S3 has it: "tree" matches "tree/..." and "treetop".
  auto partial = store_->List(Key("tree"), true);
  ASSERT_TRUE(partial.has_value());
  EXPECT_EQ(partial->objects.size(), 5u);
  auto none = store_->List(Key("nothing-here/"), true);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->objects.empty());
}

TEST_P(StoreConformanceTest, ListsMoreThanOnePageOfKeys) {
  const size_t n = GetParam().many_keys;
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  {
    std::vector<std::jthread> workers;
    for (int w = 0; w < 16; ++w) {
      workers.emplace_back([&] {
        for (size_t i = next++; i < n; i = next++) {
          char name[32];
          std::snprintf(name, sizeof name, "many/%06zu", i);
          if (!store_->Put(Key(name), "x").ok()) ++failures;
        }
      });
    }
    for (auto& w : workers) w.join();
  }
  ASSERT_EQ(failures.load(), 0);
  auto listing = store_->List(Key("many/"), true);
  ASSERT_TRUE(listing.has_value()) << listing.status().ToString();
  ASSERT_EQ(listing->objects.size(), n);
  for (size_t i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "many/%06zu", i);
    ASSERT_EQ(listing->objects[i].key, Key(name));
  }
}

TEST_P(StoreConformanceTest, LargeObjectsGoUpInPartsAndComeBackIntact) {
  const uint64_t size = GetParam().multipart_bytes;
  ASSERT_GT(size, 0u);
  const std::string data = TestBytes(size, 99);
  const std::string key = Key("large/object.bin");
  ASSERT_TRUE(store_->Put(key, data).ok());
  EXPECT_EQ(store_->Head(key)->size, size);
  // Read it back in streamed pieces and compare as we go (no second copy in memory).
  uint64_t offset = 0;
  bool same = true;
  auto info = store_->Read(key, ByteRange{}, [&](std::string_view chunk) {
    same = same && offset + chunk.size() <= size && data.compare(offset, chunk.size(), chunk) == 0;
    offset += chunk.size();
    return Status::Ok();
  });
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(offset, size);
  EXPECT_TRUE(same);
  // And from a file, to a file.
  TempDir tmp;
  ASSERT_TRUE(WriteFileAtomically(tmp / "in.bin", data).ok());
  const Status put = store_->PutFile(Key("large/from-file.bin"), tmp / "in.bin");
  ASSERT_TRUE(put.ok()) << put.ToString();
  auto saved = store_->GetToFile(Key("large/from-file.bin"), tmp / "out.bin");
  ASSERT_TRUE(saved.has_value()) << saved.status().ToString();
  EXPECT_TRUE(ReadFileToString(tmp / "out.bin").value() == data);
}

std::string Md5Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EXPECT_EQ(EVP_Digest(data.data(), data.size(), digest, &length, EVP_md5(), nullptr), 1);
  return ToHex(std::string_view(reinterpret_cast<const char*>(digest), length));
}

// The MD5 a Read reports (the store's free checksum) is the whole object's, on a whole read and
// on a range alike; a multipart object's is its MD5 or none (an S3 multipart ETag is not one).
TEST_P(StoreConformanceTest, TheMd5AReadReportsIsTheWholeObjects) {
  const auto discard = [](std::string_view) { return Status::Ok(); };
  const std::string data = TestBytes(300'000, 5);
  const std::string key = Key("md5/object.bin");
  ASSERT_TRUE(store_->Put(key, data).ok());
  for (const ByteRange range : {ByteRange{}, ByteRange{1000, 5000}}) {
    auto info = store_->Read(key, range, discard);
    ASSERT_TRUE(info.has_value()) << info.status().ToString();
    if (GetParam().gives_md5) {
      EXPECT_EQ(info->checksum.kind, ChecksumKind::kMd5) << info->checksum.from;
      EXPECT_EQ(info->checksum.hex, Md5Hex(data)) << "range at " << range.offset;
      EXPECT_FALSE(info->checksum.from.empty());
    } else {
      EXPECT_TRUE(info->checksum.empty()) << info->checksum.hex;
    }
  }
  const std::string large = TestBytes(GetParam().multipart_bytes, 6);
  ASSERT_TRUE(store_->Put(Key("md5/large.bin"), large).ok());
  auto info = store_->Read(Key("md5/large.bin"), ByteRange{0, 100}, discard);
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  if (info->checksum.kind == ChecksumKind::kMd5) {
    EXPECT_EQ(info->checksum.hex, Md5Hex(large)) << info->checksum.from;
  } else {
    EXPECT_TRUE(info->checksum.empty()) << info->checksum.from;
  }
}

TEST_P(StoreConformanceTest, RemoveDeletes) {
  const std::string key = Key("remove/me");
  ASSERT_TRUE(store_->Put(key, "bye").ok());
  ASSERT_TRUE(store_->Remove(key).ok());
  auto head = store_->Head(key);
  ASSERT_FALSE(head.has_value());
  EXPECT_EQ(head.error().code(), StatusCode::kNotFound);
  auto listing = store_->List(Key("remove/"), true);
  ASSERT_TRUE(listing.has_value());
  EXPECT_TRUE(listing->objects.empty());
}

TEST_P(StoreConformanceTest, ToUrlRoundTrips) {
  const std::string key = Key("url/round trip \xc3\xa9.txt");
  ASSERT_TRUE(store_->Put(key, "round").ok());
  const std::string url = store_->ToUrl(key);
  auto opened = OpenUrl(url);
  ASSERT_TRUE(opened.has_value()) << url << ": " << opened.status().ToString();
  EXPECT_EQ(opened->key, key);
  EXPECT_EQ(opened->store->ToUrl(opened->key), url);
  EXPECT_EQ(opened->store->Get(opened->key).value_or("<error>"), "round");
}

TEST_P(StoreConformanceTest, GetToFileLeavesNothingBehindOnFailure) {
  TempDir tmp;
  auto r = store_->GetToFile(Key("absent"), tmp / "out.bin");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));  // no partial or temporary file
}

}  // namespace ferry::testing
