#include "storage/store_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace ferry {
namespace {

// A store that is never used: the cache only holds and hands out stores.
class NamedStore final : public ObjectStore {
 public:
  std::string_view scheme() const override { return "test"; }
  std::string ToUrl(std::string_view key) const override { return "test://" + std::string(key); }
  Result<ObjectInfo> Head(std::string_view) override { return UnimplementedError("unused"); }
  Result<ObjectInfo> Read(std::string_view, ByteRange, const ByteSink&) override {
    return UnimplementedError("unused");
  }
  Status Write(std::string_view, const ByteSource&) override {
    return UnimplementedError("unused");
  }
  Result<ListResult> List(std::string_view, bool) override { return UnimplementedError("unused"); }
  Status Remove(std::string_view) override { return UnimplementedError("unused"); }
};

// Each test uses keys of its own: the cache lives as long as the process.
struct CountingMaker {
  Result<std::shared_ptr<ObjectStore>> operator()() {
    ++calls;
    return std::shared_ptr<ObjectStore>(std::make_shared<NamedStore>());
  }
  std::atomic<int> calls = 0;
};

TEST(CachedStore, TheSameKeyGivesTheSameStoreBuiltOnce) {
  CountingMaker make;
  auto first = CachedStore("same\nkey", std::ref(make));
  auto second = CachedStore("same\nkey", std::ref(make));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(make.calls, 1);
}

TEST(CachedStore, AnotherKeyGivesAnotherStore) {
  CountingMaker make;
  auto a = CachedStore("key a\nsecret=1", std::ref(make));
  auto b = CachedStore("key a\nsecret=2", std::ref(make));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->get(), b->get());
  EXPECT_EQ(make.calls, 2);
}

TEST(CachedStore, AFailureIsReturnedAndNotCached) {
  int calls = 0;
  auto failing = [&]() -> Result<std::shared_ptr<ObjectStore>> {
    ++calls;
    return InvalidArgumentError("bad configuration");
  };
  EXPECT_EQ(CachedStore("failing key", failing).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CachedStore("failing key", failing).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(calls, 2);
  CountingMaker make;
  auto store = CachedStore("failing key", std::ref(make));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(make.calls, 1);
}

TEST(CachedStore, ConcurrentCallersAllGetTheFirstStore) {
  CountingMaker make;
  std::vector<std::shared_ptr<ObjectStore>> got(8);
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < got.size(); ++i) {
      threads.emplace_back([&, i] { got[i] = CachedStore("raced key", std::ref(make)).value(); });
    }
  }
  for (const auto& store : got) EXPECT_EQ(store.get(), got[0].get());
  EXPECT_GE(make.calls, 1);
}

TEST(CachedStore, KeepsAtMostTheBoundForgettingTheOldest) {
  CountingMaker make;
  for (size_t i = 0; i <= kMaxCachedStores; ++i) {
    ASSERT_TRUE(CachedStore("bound\n" + std::to_string(i), std::ref(make)).ok());
  }
  EXPECT_EQ(make.calls, static_cast<int>(kMaxCachedStores) + 1);
  // The newest is still cached; the oldest was forgotten and is built again.
  ASSERT_TRUE(CachedStore("bound\n" + std::to_string(kMaxCachedStores), std::ref(make)).ok());
  EXPECT_EQ(make.calls, static_cast<int>(kMaxCachedStores) + 1);
  ASSERT_TRUE(CachedStore("bound\n0", std::ref(make)).ok());
  EXPECT_EQ(make.calls, static_cast<int>(kMaxCachedStores) + 2);
}

}  // namespace
}  // namespace ferry
