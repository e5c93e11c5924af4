// The fixture of the ShardCache tests (shard_cache_test.cc: acquiring and sharing;
// shard_cache_eviction_test.cc: pins and cache_limit; shard_cache_integrity_test.cc: crashes,
// corruption, digests and kept zips): a remote dataset (a FileStore folder seen through a
// recording TestStore) and a cache folder.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "base/boot_time.h"
#include "base/file_util.h"
#include "base/temp_dir_testutil.h"
#include "cache/cache_testutil.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/metrics/metrics.h"
#include "format/fixture_testutil.h"

namespace ferry::shard_cache_test {

namespace fs = std::filesystem;

inline uint64_t CounterValue(std::string_view name) { return metrics::GetCounter(name).value(); }

// Names of files in the cache folder that are temporaries.
inline std::vector<std::string> Temporaries(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& [name, size] : testing::FilesIn(folder)) {
    if (name.ends_with(".ferry-tmp")) out.push_back(name);
  }
  return out;
}

inline void FlipByte(const fs::path& path, size_t offset) {
  std::string text = testing::FileText(path);
  ASSERT_LT(offset, text.size());
  text[offset] = static_cast<char>(text[offset] ^ 0x5a);
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());
}

inline std::vector<size_t> Iota(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  return order;
}

// Moves the boot time past everything written so far, for one scope.
struct RebootedAfterThisTest {
  RebootedAfterThisTest() {
    SetBootTimeForTesting(std::chrono::system_clock::now() + std::chrono::hours(1));
  }
  ~RebootedAfterThisTest() { SetBootTimeForTesting(std::nullopt); }
  RebootedAfterThisTest(const RebootedAfterThisTest&) = delete;
  RebootedAfterThisTest& operator=(const RebootedAfterThisTest&) = delete;
};

class ShardCacheTest : public ::testing::Test {
 protected:
  fs::path Remote() const { return tmp_ / "remote"; }
  fs::path Cache() const { return tmp_ / "cache"; }
  fs::path ReadLog() const { return tmp_ / "reads.log"; }

  const DatasetDescription& WriteRemote(const testing::DatasetSpec& spec = {}) {
    index_ = testing::WriteDataset(Remote(), spec);
    EXPECT_GE(index_.shards.size(), 4u);
    return index_;
  }

  std::shared_ptr<ObjectStore> Store(testing::TestStoreOptions options = {}) {
    if (options.log.empty()) options.log = ReadLog();
    StoreAndKey remote = testing::LocalRemote(Remote());
    prefix_ = remote.key;
    return std::make_shared<testing::TestStore>(remote.store, std::move(options));
  }

  std::unique_ptr<ShardCache> Open(ShardCacheOptions options = {},
                                   std::shared_ptr<ObjectStore> store = nullptr) {
    if (options.local.empty()) options.local = Cache();
    if (store == nullptr) store = Store();
    auto cache = ShardCache::Open(std::move(store), prefix_, index_, std::move(options));
    EXPECT_TRUE(cache.has_value()) << cache.status().ToString();
    return cache.has_value() ? std::move(*cache) : nullptr;
  }

  // Reads of the remote file `basename` logged so far (every process appends to one log).
  int Reads(const std::string& basename) const {
    return testing::CountLogged(ReadLog())[prefix_ + "/" + basename];
  }
  // The file a shard's download fetches.
  const FileInfo& Fetched(size_t k) const {
    const ShardDescription& shard = index_.shards[k];
    return shard.zip_data ? *shard.zip_data : shard.raw_data;
  }
  uint64_t ShardBytes(size_t k) const { return index_.shards[k].raw_data.bytes; }
  // The most one download adds to the folder: both files while a compressed one is unpacked.
  uint64_t LargestPeak() const {
    uint64_t peak = 0;
    for (const ShardDescription& s : index_.shards) {
      peak = std::max(peak, s.raw_data.bytes + (s.zip_data ? s.zip_data->bytes : 0));
    }
    return peak;
  }
  fs::path RawPath(size_t k, const fs::path& folder) const {
    return folder / index_.shards[k].raw_data.basename;
  }

  testing::TempDir tmp_;
  DatasetDescription index_;
  std::string prefix_;
};

}  // namespace ferry::shard_cache_test
