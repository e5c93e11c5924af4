#include "storage/store_cache.h"

#include <deque>
#include <map>
#include <string>

#include "base/mutex.h"
#include "storage/sha256.h"

namespace ferry {
namespace {

struct StoreCache {
  Mutex mu;
  std::map<std::string, std::shared_ptr<ObjectStore>, std::less<>> stores GUARDED_BY(mu);
  std::deque<std::string> order GUARDED_BY(mu);  // keys of `stores`, oldest first
};

StoreCache& TheStoreCache() {
  static auto* cache = new StoreCache();  // never destroyed: stores may be used until exit
  return *cache;
}

}  // namespace

Result<std::shared_ptr<ObjectStore>> CachedStore(
    std::string_view key, const std::function<Result<std::shared_ptr<ObjectStore>>()>& make) {
  const std::string digest = Sha256Hex(key);
  StoreCache& cache = TheStoreCache();
  {
    MutexLock lock(cache.mu);
    if (auto it = cache.stores.find(digest); it != cache.stores.end()) return it->second;
  }
  // Built unlocked: making a store may read files (~/.aws/config), and other stores need not
  // wait for that.
  FERRY_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, make());
  MutexLock lock(cache.mu);
  // Another thread may have built the same store meanwhile; keep the first.
  auto [it, added] = cache.stores.emplace(digest, std::move(store));
  if (added) {
    cache.order.push_back(digest);
    // Rotated credentials (a session token in the environment) make a new key each time: the
    // oldest stores are forgotten, and live on with whoever still holds them.
    while (cache.order.size() > kMaxCachedStores) {
      cache.stores.erase(cache.order.front());
      cache.order.pop_front();
    }
  }
  return it->second;
}

}  // namespace ferry
