#include "storage/store_cache.h"

#include <map>
#include <string>

#include "base/mutex.h"
#include "storage/sha256.h"

namespace ferry {
namespace {

struct StoreCache {
  Mutex mu;
  std::map<std::string, std::shared_ptr<ObjectStore>, std::less<>> stores GUARDED_BY(mu);
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
  return cache.stores.emplace(digest, std::move(store)).first->second;
}

}  // namespace ferry
