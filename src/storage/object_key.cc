#include "storage/object_key.h"

namespace ferry {

std::string JoinKey(std::string_view prefix, std::string_view name) {
  std::string key;
  key.reserve(prefix.size() + 1 + name.size());
  key += prefix;
  if (!prefix.empty() && !prefix.ends_with('/')) key += '/';
  key += name;
  return key;
}

std::string FolderKey(std::string_view prefix) { return JoinKey(prefix, ""); }

}  // namespace ferry
