// Object keys as paths: how a folder of a store and a name below it make one key. Keys use '/'
// as the separator whatever the store ('/' is what S3, GCS and Azure list by), and the empty
// key is the store's root.
//
// Thread-safety: reentrant functions.
#pragma once

#include <string>
#include <string_view>

namespace ferry {

/// `name` below the folder `prefix`, with exactly one '/' between them: ("data/set",
/// "index.json") and ("data/set/", "index.json") give "data/set/index.json"; an empty prefix
/// gives `name` itself.
std::string JoinKey(std::string_view prefix, std::string_view name);

/// `prefix` as the key of a folder, the prefix of everything in it: "a/b" -> "a/b/"; "" (the
/// root) and "a/" stay as they are.
std::string FolderKey(std::string_view prefix);

}  // namespace ferry
