// OpenMirrors: a stream's remote and its mirrors (StreamSpec::mirrors) as one store, whose keys
// are paths inside the dataset (src/storage/mirror_store.h). Each mirror is its own store,
// instrumented as the streaming engine instruments a remote (per scheme); the split is a
// sub-folder of each.
//
// That the mirrors hold one dataset is shown once per node, not at every open of every rank and
// worker: the cache folder keeps, in .ferry/mirrors.json, the version of each mirror's
// index.json when their copies were last read and found the same, and an open whose HEADs show
// those versions reads no copy. A mirror whose copy changed (or was never seen) has every copy
// read and compared again, under the folder's cache.lock: the processes of a node that open it
// together read the copies once, and those that waited find the versions kept.
//
// Thread-safety: OpenMirrors is a free function; IndexSizes may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ferry/format/index.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "ferry/stream/streaming_dataset.h"

namespace ferry::internal_stream {

/// The folder of a stream's dataset in a store: the URL's `key` as a folder ("" or ending in
/// '/'), and `split` below it.
std::string DatasetFolder(std::string key, std::string_view split);

/// Whether the dataset folder `prefix` of `store` is the local folder `local` itself.
bool IsTheLocalFolder(const ObjectStore& store, const std::string& prefix,
                      const std::filesystem::path& local);

/// The size of every file a dataset's index names, known once the index is loaded: the store
/// that loads it is made before, and a copy of another size is passed over after.
class IndexSizes {
 public:
  /// Once, with the loaded index; until then every size is unknown.
  void Fill(const DatasetDescription& index);
  /// The size the index gives the file `basename` (a path inside the dataset), if it names it.
  std::optional<uint64_t> Of(std::string_view basename) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> sizes_;  // set before filled_
  std::atomic<bool> filled_{false};
};

struct OpenedMirrors {
  std::shared_ptr<ObjectStore> store;
  std::shared_ptr<IndexSizes> sizes;  // for the caller to fill once the index is loaded
  /// The version of the copies of index.json together (OneDataset::version), which tells
  /// whether the cache folder's copy is current (LoadIndexOptions::index_version); empty
  /// offline, or when a copy has no version.
  std::string index_version;
};

/// The mirrors of `spec` (its remote first). Unless `offline`, those whose index.json cannot be
/// read now are left out, and the rest must hold the same index.json (MirrorsOfOneDataset, with
/// the versions found the same before, kept in `local`). kInvalidArgument when one of them is
/// the cache folder `local` itself, whose shards a cache would evict. `epoch` says which epoch
/// the process reads now, for per-epoch egress budgets.
Result<OpenedMirrors> OpenMirrors(const StreamSpec& spec, const std::filesystem::path& local,
                                  bool offline, std::function<uint64_t()> epoch = nullptr);

}  // namespace ferry::internal_stream
