// URL schemes -> object stores. Each store registers its scheme(s) at the bottom of its own .cc
// with a StoreRegistration; a scheme registered twice is a fatal error at start-up; an unknown
// scheme is kInvalidArgument listing the known ones. Nothing else dispatches on schemes.
//
// Thread-safety: OpenUrl may be called concurrently; registration happens during static
// initialization only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry {

struct StoreAndKey {
  std::shared_ptr<ObjectStore> store;
  std::string key;  // may be empty (the store's root)
};

/// "s3://bucket/a/b" -> the store for `bucket` and key "a/b". A plain path (no "scheme://") is a
/// local file; relative paths are made absolute.
Result<StoreAndKey> OpenUrl(std::string_view url);

/// The registered schemes, sorted.
std::vector<std::string> RegisteredSchemes();

/// The scheme of `url` ("file" for a plain path), lowercase.
std::string UrlScheme(std::string_view url);

using StoreFactory = Result<StoreAndKey> (*)(std::string_view url);

class StoreRegistration {
 public:
  StoreRegistration(std::string_view scheme, StoreFactory factory);
};

}  // namespace ferry
