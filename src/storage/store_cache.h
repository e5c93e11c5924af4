// The stores the URL factories hand out, kept for the life of the process: every OpenUrl of a
// bucket, container or origin with the same settings gets the same store, so its connections,
// limits and metrics are shared rather than multiplied by the number of callers.
//
// A store is cached under a key that holds every input of the store: scheme, location, and each
// configuration value it is built from. A setting changed between two calls gives a second store
// (the first stays, serving whoever holds it). The key may hold secrets: only its SHA-256 is
// kept. Factories that take an explicit transport or options (tests, tools) do not use it.
//
// Thread-safety: CachedStore may be called concurrently.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry {

/// The most stores kept; past it the oldest is forgotten (its holders keep it).
inline constexpr size_t kMaxCachedStores = 64;

/// The store cached under `key`, else the one `make` builds, cached from then on. An error from
/// `make` is returned and nothing is cached.
Result<std::shared_ptr<ObjectStore>> CachedStore(
    std::string_view key, const std::function<Result<std::shared_ptr<ObjectStore>>()>& make);

}  // namespace ferry
