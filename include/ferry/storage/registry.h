// URL schemes -> object stores. Each store registers its scheme(s) at the bottom of its own .cc
// with a StoreRegistration; a scheme registered twice is a fatal error at start-up; an unknown
// scheme is kInvalidArgument listing the known ones. Nothing else dispatches on schemes.
//
// What is a URL and what a path: text that starts with a scheme (a letter, then letters, digits,
// '+', '-' or '.') and ':' is a URL, and must go on with "//" and a registered scheme; anything
// else is a local path. So "s3:/bucket/x" (one slash), "s3:x" and "foo://x" are errors, never a
// local folder named "s3:" or "foo:"; a local path whose first name has a ':' is written with
// "./" ("./a:b") or as an absolute path. The one exception is a scheme registered with
// UrlForm::kAbsolutePath, whose URLs are written "scheme:/path" (Databricks' "dbfs:/Volumes/...").
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

/// "s3://bucket/a/b" -> the store for `bucket` and key "a/b". A plain path (no leading
/// "scheme:") is a local file; relative paths are made absolute. kInvalidArgument, naming `url`
/// and the known schemes, for an unregistered scheme and for a "scheme:" without "//".
Result<StoreAndKey> OpenUrl(std::string_view url);

/// The checks OpenUrl makes before it asks a store: an empty URL, a "scheme:" without "//", a
/// scheme no store registered. kInvalidArgument naming the URL and the known schemes.
Status CheckUrlSyntax(std::string_view url);

/// The registered schemes, sorted.
std::vector<std::string> RegisteredSchemes();

/// The scheme `url` starts with, lowercase, whether or not it is registered or followed by "//"
/// ("s3" for "s3:/x"); "file" for a plain path.
std::string UrlScheme(std::string_view url);

using StoreFactory = Result<StoreAndKey> (*)(std::string_view url);

/// How a scheme's URLs go on after "scheme:".
enum class UrlForm {
  kAuthority,     // "//" and an authority: s3://bucket/key
  kAbsolutePath,  // "/" and an absolute path, "//" optional: dbfs:/Volumes/c/s/v/key
};

class StoreRegistration {
 public:
  StoreRegistration(std::string_view scheme, StoreFactory factory,
                    UrlForm form = UrlForm::kAuthority);
};

}  // namespace ferry
