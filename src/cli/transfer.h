// Copying objects between any two stores, for `ferry cp` and `ferry sync`.
//
// One object: local -> remote uploads from the file (the store splits it into parallel parts);
// remote -> local downloads to a temporary file renamed into place; remote -> remote streams
// through memory when small and through a temporary spool file when large, so a large object
// never sits whole in memory. After each copy the destination's size is checked.
//
// Many objects: a fixed number of worker threads take the plan in order; a failure of one
// object is recorded and the others go on.
//
// Thread-safety: CopyAll runs its own std::jthread workers and joins them before returning.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry {

struct CopyItem {
  std::string src_key;
  std::string dst_key;
  uint64_t size = 0;  // for progress; 0 when unknown
};

struct CopyFailure {
  std::string src_url;
  std::string dst_url;
  Status error;
};

struct CopyReport {
  uint64_t objects = 0;
  uint64_t bytes = 0;
  std::vector<CopyFailure> failures;
};

/// "a/b" -> "a/b/"; "" and "a/" stay as they are: the prefix of everything "in" a folder key.
std::string FolderPrefix(std::string key);

/// Every object below `src_prefix` (recursively), paired with the key it gets below `dst_prefix`.
Result<std::vector<CopyItem>> PlanFolderCopy(ObjectStore& src, const std::string& src_prefix,
                                             const std::string& dst_prefix);

/// Copies one object and checks the destination's size. Returns the bytes copied.
Result<uint64_t> CopyObject(ObjectStore& src, std::string_view src_key, ObjectStore& dst,
                            std::string_view dst_key);

/// Copies every item with `jobs` workers. `progress(objects_done, bytes_done)` is called after
/// each object (from worker threads, serialized).
CopyReport CopyAll(ObjectStore& src, ObjectStore& dst, const std::vector<CopyItem>& items,
                   size_t jobs, const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace ferry
