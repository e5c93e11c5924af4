#include "storage/mirror_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string_view>
#include <thread>

#include "base/temp_dir_testutil.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "storage/forwarding_store_testutil.h"
#include "storage/retry_policy.h"
#include "storage/source_speeds.h"

namespace ferry {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::string Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

// A mirror that fails reads: after `fail_after` bytes of the object (a connection lost
// mid-body), while `failing`; and records the ranges asked.
class FlakyStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  std::atomic<bool> failing{false};
  uint64_t fail_after = 0;
  std::vector<std::pair<uint64_t, std::optional<uint64_t>>> ranges;

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    ranges.emplace_back(range.offset, range.length);
    if (!failing) return inner().Read(key, range, sink);
    uint64_t at = range.offset;
    auto got = inner().Read(key, range, [&](std::string_view chunk) -> Status {
      if (at + chunk.size() > fail_after) {
        const size_t keep = at < fail_after ? static_cast<size_t>(fail_after - at) : 0;
        FERRY_RETURN_IF_ERROR(sink(chunk.substr(0, keep)));
        return UnavailableError("connection reset (injected)");
      }
      at += chunk.size();
      return sink(chunk);
    });
    return got;
  }
};

uint64_t Counter(const std::string& name) { return metrics::GetCounter(name).value(); }

std::function<std::optional<uint64_t>(std::string_view)> SizesOf(
    std::map<std::string, uint64_t, std::less<>> sizes) {
  return [sizes = std::move(sizes)](std::string_view key) -> std::optional<uint64_t> {
    const auto it = sizes.find(key);
    return it == sizes.end() ? std::nullopt : std::optional(it->second);
  };
}

// A mirror that refuses every connection, with a store's retry loop (8 attempts) around each.
class RefusingStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  std::atomic<int> attempts{0};
  Result<ObjectInfo> Read(std::string_view, ByteRange, const ByteSink&) override {
    return Retry(RetryPolicy{.max_attempts = 8, .initial_backoff = std::chrono::milliseconds(1)},
                 [&]() -> Result<ObjectInfo> {
                   ++attempts;
                   return UnavailableError("connection refused (injected)");
                 });
  }
};

class MirrorStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"a", "b", "c"}) {
      auto opened = OpenUrl((tmp_ / name).string() + "/");
      ASSERT_TRUE(opened.has_value()) << opened.status().ToString();
      folders_.push_back(*opened);
    }
    data_ = Bytes(300'000, 1);
    for (const StoreAndKey& folder : folders_) {
      ASSERT_TRUE(folder.store->Put(folder.key + "index.json", "{}").ok());
      ASSERT_TRUE(folder.store->Put(folder.key + "shard.0", data_).ok());
    }
    flaky_ = std::make_shared<FlakyStore>(folders_[0].store);
  }

  std::shared_ptr<ObjectStore> Mirrors(MirrorOptions options = {}) {
    auto store = MakeMirrorStore({{flaky_, folders_[0].key},
                                  {folders_[1].store, folders_[1].key},
                                  {folders_[2].store, folders_[2].key}},
                                 options);
    EXPECT_TRUE(store.has_value()) << store.status().ToString();
    return *store;
  }

  TempDir tmp_;
  std::vector<StoreAndKey> folders_;
  std::shared_ptr<FlakyStore> flaky_;
  std::string data_;
};

TEST_F(MirrorStoreTest, ReadsFromTheFirstMirror) {
  const uint64_t first = Counter("/ferry/mirror/0/bytes_read");
  const uint64_t second = Counter("/ferry/mirror/1/bytes_read");
  auto got = Mirrors()->Get("shard.0");
  ASSERT_TRUE(got.has_value()) << got.status().ToString();
  EXPECT_TRUE(*got == data_);
  EXPECT_EQ(Counter("/ferry/mirror/0/bytes_read") - first, data_.size());
  EXPECT_EQ(Counter("/ferry/mirror/1/bytes_read") - second, 0u);
}

TEST_F(MirrorStoreTest, AFailureMidBodyGoesOnFromTheNextMirrorAtTheByteReached) {
  flaky_->failing = true;
  flaky_->fail_after = 123'457;
  const uint64_t first = Counter("/ferry/mirror/0/bytes_read");
  const uint64_t second = Counter("/ferry/mirror/1/bytes_read");
  const uint64_t failovers = Counter("/ferry/mirror/0/failovers");
  auto store = Mirrors({.demotion = {.demote_for = std::chrono::milliseconds(200)}});
  std::string got;
  auto info = store->Read("shard.0", {.offset = 1000}, [&](std::string_view chunk) {
    got.append(chunk);
    return Status::Ok();
  });
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_TRUE(got == data_.substr(1000)) << "every byte once, in order";
  EXPECT_EQ(Counter("/ferry/mirror/0/bytes_read") - first, 123'457u - 1000);
  EXPECT_EQ(Counter("/ferry/mirror/1/bytes_read") - second, data_.size() - 123'457);
  EXPECT_EQ(Counter("/ferry/mirror/0/failovers") - failovers, 1u);
  EXPECT_TRUE(info->etag.empty());
  EXPECT_TRUE(info->checksum.empty()) << "two mirrors sent it";

  // Demoted: the next read goes to the second mirror without asking the first...
  flaky_->ranges.clear();
  ASSERT_TRUE(store->Get("shard.0").has_value());
  EXPECT_TRUE(flaky_->ranges.empty());
  // ... until its demotion ends: then it is asked again, and back in favour when it answers.
  flaky_->failing = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const uint64_t before = Counter("/ferry/mirror/0/bytes_read");
  ASSERT_TRUE(store->Get("shard.0").has_value());
  ASSERT_TRUE(store->Get("shard.0").has_value());
  EXPECT_EQ(Counter("/ferry/mirror/0/bytes_read") - before, 2 * data_.size());
}

// A mirror's store retries for as long as its policy allows only when it is the last resort:
// with another mirror to go on from, two attempts.
TEST_F(MirrorStoreTest, AMirrorWithAnotherBehindItIsNotRetriedInFull) {
  auto refusing = std::make_shared<RefusingStore>(folders_[0].store);
  auto store = MakeMirrorStore({{refusing, folders_[0].key}, {folders_[1].store, folders_[1].key}});
  ASSERT_TRUE(store.has_value());
  auto got = (*store)->Get("shard.0");
  ASSERT_TRUE(got.has_value()) << got.status().ToString();
  EXPECT_TRUE(*got == data_);
  EXPECT_EQ(refusing->attempts.load(), 2);

  auto alone = std::make_shared<RefusingStore>(folders_[0].store);
  auto last = MakeMirrorStore({{alone, folders_[0].key}});
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ((*last)->Get("shard.0").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(alone->attempts.load(), 8);
}

// A source that spent its egress budget passes reads on - the one under way from the byte it
// reached - and with no mirror left a read fails saying so.
TEST_F(MirrorStoreTest, ASourceStopsAtItsEgressBudget) {
  for (int k = 1; k < 4; ++k) {
    for (const StoreAndKey& folder : folders_) {
      ASSERT_TRUE(folder.store->Put(folder.key + "shard." + std::to_string(k), data_).ok());
    }
  }
  constexpr uint64_t kBudget = 500'000;  // a shard and two thirds
  std::vector<Mirror> mirrors = {
      {.store = folders_[0].store,
       .prefix = folders_[0].key,
       .egress = {.label = "budgeted", .usd_per_gb = 0.09, .budget = kBudget}},
      {.store = folders_[1].store, .prefix = folders_[1].key, .egress = {.label = "free"}}};
  auto store = MakeMirrorStore(mirrors);
  ASSERT_TRUE(store.has_value());
  const uint64_t budgeted = Counter(SourceCounterName("budgeted", "bytes_read"));
  const uint64_t free = Counter(SourceCounterName("free", "bytes_read"));
  for (int k = 0; k < 4; ++k) {
    auto got = (*store)->Get("shard." + std::to_string(k));
    ASSERT_TRUE(got.has_value()) << got.status().ToString();
    EXPECT_TRUE(*got == data_) << k;
  }
  const uint64_t spent = Counter(SourceCounterName("budgeted", "bytes_read")) - budgeted;
  EXPECT_GE(spent, kBudget);
  EXPECT_LT(spent, kBudget + (uint64_t{1} << 20));  // within the chunk that crossed it
  EXPECT_EQ(Counter(SourceCounterName("free", "bytes_read")) - free, 4 * data_.size() - spent);
  EXPECT_GE(Counter(SourceCounterName("budgeted", "over_budget")), 2u);

  // The budget's source alone: the read that crosses it fails, naming the budget.
  auto alone = MakeMirrorStore({mirrors[0]});
  ASSERT_TRUE(alone.has_value());
  Status failed;
  for (int k = 0; k < 4 && failed.ok(); ++k) failed = (*alone)->Get("shard.0").status();
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(failed.message(), HasSubstr("egress budget of 500000"));
  EXPECT_THAT(failed.message(), HasSubstr("budgeted has delivered"));
}

// Reads delivering at once cannot all cross the budget: each chunk is claimed against it first,
// with the chunks the other reads are delivering.
TEST_F(MirrorStoreTest, ConcurrentReadsEndOneChunkPastTheBudgetAtMost) {
  constexpr int kReads = 8;
  for (int k = 1; k < kReads; ++k) {
    for (const StoreAndKey& folder : folders_) {
      ASSERT_TRUE(folder.store->Put(folder.key + "shard." + std::to_string(k), data_).ok());
    }
  }
  constexpr uint64_t kBudget = 500'000;
  auto store = MakeMirrorStore(
      {{.store = folders_[0].store,
        .prefix = folders_[0].key,
        .egress = {.label = "contended", .budget = kBudget}},
       {.store = folders_[1].store, .prefix = folders_[1].key, .egress = {.label = "spare"}}});
  ASSERT_TRUE(store.has_value());
  const uint64_t before = Counter(SourceCounterName("contended", "bytes_read"));
  std::atomic<int> ready{0};
  std::vector<std::string> got(kReads);
  {
    std::vector<std::jthread> readers;
    for (int k = 0; k < kReads; ++k) {
      readers.emplace_back([&, k] {
        ++ready;
        while (ready.load() < kReads) std::this_thread::yield();
        got[k] = (*store)->Get("shard." + std::to_string(k)).value_or("");
      });
    }
  }
  for (int k = 0; k < kReads; ++k) EXPECT_TRUE(got[k] == data_) << k;
  const uint64_t spent = Counter(SourceCounterName("contended", "bytes_read")) - before;
  EXPECT_GE(spent, kBudget);
  // A local read is one chunk of 300 KB: two fit under the budget, the others go to the spare.
  EXPECT_LT(spent, kBudget + data_.size()) << "one chunk past the budget at most";
}

// A budget per epoch starts again with each epoch; the reads of one epoch past it go to the
// other mirror, and with it alone fail naming the epoch's budget.
TEST_F(MirrorStoreTest, AnEpochBudgetStartsAgainEachEpoch) {
  constexpr uint64_t kPerEpoch = 400'000;  // a shard and a third
  auto epoch = std::make_shared<std::atomic<uint64_t>>(0);
  std::vector<Mirror> mirrors = {
      {.store = folders_[0].store,
       .prefix = folders_[0].key,
       .egress = {.label = "per-epoch", .epoch_budget = kPerEpoch}},
      {.store = folders_[1].store, .prefix = folders_[1].key, .egress = {.label = "other"}}};
  auto store = MakeMirrorStore(mirrors, {.epoch = [epoch] { return epoch->load(); }});
  ASSERT_TRUE(store.has_value());
  for (uint64_t e = 0; e < 3; ++e) {
    epoch->store(e);
    const uint64_t before = Counter(SourceCounterName("per-epoch", "bytes_read"));
    for (int k = 0; k < 3; ++k) {
      auto got = (*store)->Get("shard.0");
      ASSERT_TRUE(got.has_value()) << got.status().ToString();
      EXPECT_TRUE(*got == data_) << e << " " << k;
    }
    const uint64_t spent = Counter(SourceCounterName("per-epoch", "bytes_read")) - before;
    EXPECT_GE(spent, kPerEpoch) << "epoch " << e;
    EXPECT_LT(spent, kPerEpoch + (uint64_t{1} << 20)) << "epoch " << e;
  }
  auto alone = MakeMirrorStore({mirrors[0]}, {.epoch = [epoch] { return epoch->load(); }});
  ASSERT_TRUE(alone.has_value());
  Status failed;
  for (int k = 0; k < 4 && failed.ok(); ++k) failed = (*alone)->Get("shard.0").status();
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(failed.message(), HasSubstr("this epoch, of its egress budget of 400000 per epoch"));
  epoch->store(3);
  EXPECT_TRUE((*alone)->Get("shard.0").ok()) << "a new epoch, a new budget";
}

// A mirror that delivers slowly (a pause per chunk).
class SlowStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    return inner().Read(key, range, [&](std::string_view chunk) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return sink(chunk);
    });
  }
};

// Preference yields to measured speed: once the mirror behind is measured (a probe) at more
// than twice the first's speed, reads go to it.
TEST_F(MirrorStoreTest, ReadsMoveToAMirrorMeasuredMuchFaster) {
  auto slow = std::make_shared<SlowStore>(folders_[0].store);
  auto store = MakeMirrorStore({{slow, folders_[0].key}, {folders_[1].store, folders_[1].key}});
  ASSERT_TRUE(store.has_value());
  const uint64_t first = Counter("/ferry/mirror/0/bytes_read");
  const uint64_t second = Counter("/ferry/mirror/1/bytes_read");
  for (int n = 0; n < 40; ++n) {
    auto got = (*store)->Get("shard.0");
    ASSERT_TRUE(got.has_value()) << got.status().ToString();
    EXPECT_TRUE(*got == data_);
  }
  const uint64_t from_slow = (Counter("/ferry/mirror/0/bytes_read") - first) / data_.size();
  const uint64_t from_fast = (Counter("/ferry/mirror/1/bytes_read") - second) / data_.size();
  EXPECT_EQ(from_slow + from_fast, 40u);
  // The first 15 reads (before the first probe) from the preferred mirror, then the fast one,
  // but for the probes that measure the slow one again (every 16th read, once it is stale).
  EXPECT_EQ(from_slow, 15u);
  EXPECT_EQ(from_fast, 25u);
}

TEST(SourceSpeedsTest, ReordersOnlyForSpeedsMoreThanTwiceApart) {
  SourceSpeeds speeds(3);
  const auto second = std::chrono::seconds(1);
  std::vector<size_t> order = {0, 1, 2};
  speeds.Reorder(order);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));  // nothing measured: preference
  speeds.Record(0, 1'000'000, second);
  speeds.Record(1, 1'900'000, second);  // faster, but not twice
  speeds.Reorder(order);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));
  // Five times the first's, more than twice the second's: both yield to it, and keep their
  // order between them (not twice apart).
  speeds.Record(2, 5'000'000, second);
  order = {0, 1, 2};
  speeds.Reorder(order);
  EXPECT_EQ(order, (std::vector<size_t>{2, 0, 1}));
  speeds.Record(0, 1'000, second);  // too small a read to count
  order = {0, 1, 2};
  speeds.Reorder(order);
  EXPECT_EQ(order, (std::vector<size_t>{2, 0, 1}));
}

TEST(SourceSpeedsTest, AReadTooShortToTimeDoesNotMakeASourceSlow) {
  SourceSpeeds speeds(2);
  // Two equal sources whose reads take about a millisecond measure far apart by chance: the
  // first stays first.
  speeds.Record(0, 300'000, std::chrono::microseconds(3000));
  speeds.Record(1, 300'000, std::chrono::microseconds(900));
  std::vector<size_t> order = {0, 1};
  speeds.Reorder(order);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1}));
  // A read long enough to time at a third of the speed does.
  speeds.Record(0, 300'000, std::chrono::milliseconds(100));
  speeds.Reorder(order);
  EXPECT_EQ(order, (std::vector<size_t>{1, 0}));
}

TEST(SourceLabelTest, IsTheStoreAndBucketUnlessGiven) {
  EXPECT_EQ(SourceLabel({}, "s3://source/train/"), "s3://source");
  EXPECT_EQ(SourceLabel({}, "az://staged/train/"), "az://staged");
  EXPECT_EQ(SourceLabel({}, "file:///data/train/"), "file:///data/train");
  EXPECT_EQ(SourceLabel({.label = "aws-us-east-1"}, "s3://source/train/"), "aws-us-east-1");
  EXPECT_EQ(SourceCounterName("s3://source", "bytes_read"), "/ferry/source/s3___source/bytes_read");
}

TEST_F(MirrorStoreTest, AnObjectAMirrorLacksComesFromTheNextWhichStaysSecond) {
  ASSERT_TRUE(folders_[0].store->Remove(folders_[0].key + "shard.0").ok());
  ASSERT_TRUE(folders_[0].store->Put(folders_[0].key + "shard.1", "one").ok());
  ASSERT_TRUE(folders_[1].store->Put(folders_[1].key + "shard.1", "one").ok());
  const uint64_t missing = Counter("/ferry/mirror/0/missing");
  const uint64_t failovers = Counter("/ferry/mirror/0/failovers");
  auto store = Mirrors();
  auto got = store->Get("shard.0");
  ASSERT_TRUE(got.has_value()) << got.status().ToString();
  EXPECT_TRUE(*got == data_);
  EXPECT_EQ(Counter("/ferry/mirror/0/missing") - missing, 1u);
  EXPECT_EQ(Counter("/ferry/mirror/0/failovers") - failovers, 0u);
  // Not demoted: what it has, it serves.
  const uint64_t before = Counter("/ferry/mirror/0/bytes_read");
  EXPECT_EQ(store->Get("shard.1").value_or(""), "one");
  EXPECT_EQ(Counter("/ferry/mirror/0/bytes_read") - before, 3u);
}

TEST_F(MirrorStoreTest, ACopyOfAnotherSizeIsPassedOverFromThenOn) {
  // The first mirror holds shard.0 one byte too long, and shard.1 cut short.
  ASSERT_TRUE(folders_[0].store->Put(folders_[0].key + "shard.0", data_ + "x").ok());
  ASSERT_TRUE(folders_[0].store->Put(folders_[0].key + "shard.1", data_.substr(0, 1000)).ok());
  for (size_t m : {1, 2}) {
    ASSERT_TRUE(folders_[m].store->Put(folders_[m].key + "shard.1", data_).ok());
  }
  const uint64_t wrong = Counter("/ferry/mirror/0/wrong_size");
  const uint64_t failovers = Counter("/ferry/mirror/0/failovers");
  auto store =
      Mirrors({.size_of = SizesOf({{"shard.0", data_.size()}, {"shard.1", data_.size()}})});
  // A folder's read of 300 KB is one chunk, found too long before it reaches the caller: the
  // read goes on at the next mirror.
  auto longer = store->Get("shard.0");
  ASSERT_TRUE(longer.has_value()) << longer.status().ToString();
  EXPECT_TRUE(*longer == data_);
  // The short copy's bytes reached the caller before its size showed: the caller's read fails,
  // and its retry is served by the next mirror.
  auto shorter = store->Get("shard.1");
  ASSERT_FALSE(shorter.has_value());
  EXPECT_EQ(shorter.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(shorter.status().message(), HasSubstr("/a/shard.1"));
  EXPECT_THAT(shorter.status().message(), HasSubstr("has 1000 bytes, the index says 300000"));
  for (const char* key : {"shard.0", "shard.1"}) {
    const uint64_t before = Counter("/ferry/mirror/0/bytes_read");
    auto again = store->Get(key);
    ASSERT_TRUE(again.has_value()) << again.status().ToString();
    EXPECT_TRUE(*again == data_) << key;
    EXPECT_EQ(Counter("/ferry/mirror/0/bytes_read"), before) << "passed over: " << key;
  }
  EXPECT_EQ(Counter("/ferry/mirror/0/wrong_size") - wrong, 2u);
  EXPECT_EQ(Counter("/ferry/mirror/0/failovers") - failovers, 0u) << "not demoted";
  // What it holds in the right size, it still serves.
  const uint64_t before = Counter("/ferry/mirror/0/bytes_read");
  ASSERT_TRUE(folders_[0].store->Put(folders_[0].key + "shard.2", "two").ok());
  EXPECT_EQ(store->Get("shard.2").value_or(""), "two");
  EXPECT_EQ(Counter("/ferry/mirror/0/bytes_read") - before, 3u);
}

TEST_F(MirrorStoreTest, AHeadOfACopyOfAnotherSizeGoesToTheNextMirror) {
  ASSERT_TRUE(folders_[0].store->Put(folders_[0].key + "shard.0", "short").ok());
  auto store = Mirrors({.size_of = SizesOf({{"shard.0", data_.size()}})});
  auto info = store->Head("shard.0");
  ASSERT_TRUE(info.has_value()) << info.status().ToString();
  EXPECT_EQ(info->size, data_.size());
  // Every copy of another size (or none): kDataLoss naming them.
  ASSERT_TRUE(folders_[1].store->Put(folders_[1].key + "shard.0", "short").ok());
  ASSERT_TRUE(folders_[2].store->Remove(folders_[2].key + "shard.0").ok());
  auto none = Mirrors({.size_of = SizesOf({{"shard.0", data_.size()}})})->Head("shard.0");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(none.status().message(), HasSubstr("no mirror has a copy of the size"));
  EXPECT_THAT(none.status().message(), HasSubstr("/b/shard.0"));
}

TEST_F(MirrorStoreTest, WhatNoMirrorHasIsNotFoundNamingEachOne) {
  auto got = Mirrors()->Get("shard.9");
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  for (const char* name : {"/a/shard.9", "/b/shard.9", "/c/shard.9"}) {
    EXPECT_THAT(got.status().message(), HasSubstr(name));
  }
}

TEST_F(MirrorStoreTest, EveryMirrorFailingIsTheLastError) {
  flaky_->failing = true;
  auto store = MakeMirrorStore({{flaky_, folders_[0].key}}).value();
  auto got = store->Get("shard.0");
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(got.status().message(), HasSubstr("every mirror of"));
  EXPECT_THAT(got.status().message(), HasSubstr("connection reset (injected)"));
}

TEST_F(MirrorStoreTest, TheCallersStopIsNotAMirrorsFailure) {
  const uint64_t failovers = Counter("/ferry/mirror/0/failovers");
  auto store = Mirrors();
  auto got = store->Read("shard.0", {}, [](std::string_view chunk) {
    return chunk.empty() ? Status::Ok() : CancelledError("enough");
  });
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(Counter("/ferry/mirror/0/failovers") - failovers, 0u);
  flaky_->ranges.clear();
  ASSERT_TRUE(store->Get("shard.0").has_value());
  EXPECT_EQ(flaky_->ranges.size(), 1u) << "still the first mirror";
}

TEST_F(MirrorStoreTest, ListsAndHeadsRelativeToTheDatasetAndRefusesWrites) {
  auto store = Mirrors();
  auto listed = store->List("", true);
  ASSERT_TRUE(listed.has_value()) << listed.status().ToString();
  ASSERT_EQ(listed->objects.size(), 2u);
  EXPECT_EQ(listed->objects[0].key, "index.json");
  EXPECT_EQ(listed->objects[1].key, "shard.0");
  auto head = store->Head("shard.0");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->key, "shard.0");
  EXPECT_EQ(head->size, data_.size());
  EXPECT_TRUE(store->read_only());
  EXPECT_EQ(store->Put("x", "y").code(), StatusCode::kFailedPrecondition);
}

TEST_F(MirrorStoreTest, MirrorsMustHoldTheSameIndexByteForByte) {
  std::vector<Mirror> mirrors;
  for (const StoreAndKey& folder : folders_) mirrors.push_back({folder.store, folder.key});
  auto kept = MirrorsOfOneDataset(mirrors, "index.json");
  ASSERT_TRUE(kept.has_value()) << kept.status().ToString();
  ASSERT_EQ(kept->mirrors.size(), 3u);
  for (const Mirror& mirror : kept->mirrors) EXPECT_FALSE(mirror.left_out);
  EXPECT_EQ(kept->versions.size(), 3u) << "a local copy's version is its time";
  // One that cannot show its copy - here the first - is left out, in its place; the others
  // still agree.
  ASSERT_TRUE(folders_[0].store->Remove(folders_[0].key + "index.json").ok());
  kept = MirrorsOfOneDataset(mirrors, "index.json");
  ASSERT_TRUE(kept.has_value()) << kept.status().ToString();
  ASSERT_EQ(kept->mirrors.size(), 3u);
  EXPECT_TRUE(kept->mirrors[0].left_out);
  EXPECT_FALSE(kept->mirrors[1].left_out);
  EXPECT_EQ(kept->versions.size(), 2u);
  // Never read, while the store keeps its first mirror's URL.
  auto store = MakeMirrorStore(kept->mirrors).value();
  EXPECT_THAT(store->ToUrl("shard.0"), HasSubstr("/a/shard.0"));
  const uint64_t first = Counter("/ferry/mirror/0/bytes_read");
  ASSERT_TRUE(store->Get("shard.0").has_value());
  EXPECT_EQ(Counter("/ferry/mirror/0/bytes_read"), first);
  // Two that differ are an error naming both.
  ASSERT_TRUE(folders_[2].store->Put(folders_[2].key + "index.json", "{ }").ok());
  auto differs = MirrorsOfOneDataset(mirrors, "index.json");
  ASSERT_FALSE(differs.has_value());
  EXPECT_EQ(differs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(differs.status().message(), HasSubstr("/c/index.json (3 bytes) is not"));
  EXPECT_THAT(differs.status().message(), HasSubstr("/b/index.json (2 bytes)"));
  // None: the first one's error.
  ASSERT_TRUE(folders_[0].store->Put(folders_[0].key + "index.json", "{}").ok());
  for (const StoreAndKey& folder : folders_) {
    ASSERT_TRUE(folder.store->Remove(folder.key + "index.json").ok());
  }
  auto none = MirrorsOfOneDataset(mirrors, "index.json");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr("no mirror can show"));
}

// What the cache folder keeps between opens (src/stream/stream_mirrors.h): the copies' versions
// when they were found the same, so that the next open asks each for its version only.
TEST_F(MirrorStoreTest, CopiesFoundTheSameAreNotReadAgainWhileTheirVersionsHold) {
  std::vector<std::shared_ptr<FlakyStore>> counted;  // records each read
  std::vector<Mirror> mirrors;
  for (const StoreAndKey& folder : folders_) {
    counted.push_back(std::make_shared<FlakyStore>(folder.store));
    mirrors.push_back({counted.back(), folder.key});
  }
  const auto reads = [&] {
    size_t n = 0;
    for (const auto& store : counted) n += store->ranges.size();
    return n;
  };
  auto found = MirrorsOfOneDataset(mirrors, "index.json");
  ASSERT_TRUE(found.has_value()) << found.status().ToString();
  ASSERT_EQ(found->versions.size(), 3u);
  EXPECT_EQ(reads(), 3u);
  EXPECT_THAT(found->version, ::testing::StartsWith("mirrors:"));
  EXPECT_FALSE(found->confirmed);
  const CopyVersions known = found->versions;

  auto again = MirrorsOfOneDataset(mirrors, "index.json", known);
  ASSERT_TRUE(again.has_value()) << again.status().ToString();
  EXPECT_EQ(reads(), 3u) << "the HEADs showed the versions found the same";
  EXPECT_TRUE(again->versions.empty()) << "nothing new to keep";
  EXPECT_TRUE(again->confirmed);
  EXPECT_EQ(again->version, found->version);
  for (const Mirror& mirror : again->mirrors) EXPECT_FALSE(mirror.left_out);

  // One down: left out, and the others still need no read.
  const std::filesystem::path a_index = tmp_ / "a" / "index.json";
  std::filesystem::rename(a_index, tmp_ / "a" / "index.json.away");
  again = MirrorsOfOneDataset(mirrors, "index.json", known);
  ASSERT_TRUE(again.has_value()) << again.status().ToString();
  EXPECT_TRUE(again->mirrors[0].left_out);
  EXPECT_EQ(reads(), 3u);
  EXPECT_NE(again->version, found->version) << "another set of copies";
  std::filesystem::rename(tmp_ / "a" / "index.json.away", a_index);

  // A copy rewritten with other bytes has another version: every copy is read, and they differ.
  const std::filesystem::path c_index = tmp_ / "c" / "index.json";
  ASSERT_TRUE(folders_[2].store->Put(folders_[2].key + "index.json", "{ }").ok());
  const auto later = std::filesystem::last_write_time(c_index) + std::chrono::seconds(1);
  std::filesystem::last_write_time(c_index, later);
  auto unread = MirrorsOfOneDataset(mirrors, "index.json", known, /*read_copies=*/false);
  ASSERT_TRUE(unread.has_value()) << unread.status().ToString();
  EXPECT_FALSE(unread->confirmed);
  EXPECT_EQ(reads(), 3u) << "asked not to read the copies";
  auto differs = MirrorsOfOneDataset(mirrors, "index.json", known);
  ASSERT_FALSE(differs.has_value());
  EXPECT_EQ(differs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(differs.status().message(), HasSubstr("/c/index.json (3 bytes) is not"));
  EXPECT_EQ(reads(), 6u);

  // Rewritten with the same bytes: read and found the same, with its new version to keep.
  ASSERT_TRUE(folders_[2].store->Put(folders_[2].key + "index.json", "{}").ok());
  std::filesystem::last_write_time(c_index, later + std::chrono::seconds(1));
  auto same = MirrorsOfOneDataset(mirrors, "index.json", known);
  ASSERT_TRUE(same.has_value()) << same.status().ToString();
  EXPECT_EQ(reads(), 9u);
  ASSERT_EQ(same->versions.size(), 3u);
  EXPECT_NE(same->versions, known);
  EXPECT_NE(same->version, found->version);
}

}  // namespace
}  // namespace ferry
