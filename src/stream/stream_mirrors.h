// OpenMirrors: a stream's remote and its mirrors (StreamSpec::mirrors) as one store, whose keys
// are paths inside the dataset (src/storage/mirror_store.h). Each mirror is its own store,
// instrumented as the streaming engine instruments a remote (per scheme); the split is a
// sub-folder of each.
//
// Thread-safety: a free function.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

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

/// The mirrors of `spec` (its remote first). Unless `offline`, those whose index.json cannot be
/// read now are left out, and the rest must have the same bytes (MirrorsOfOneDataset).
/// kInvalidArgument when one of them is the cache folder `local` itself, whose shards a cache
/// would evict. `epoch` says which epoch the process reads now, for per-epoch egress budgets.
Result<std::shared_ptr<ObjectStore>> OpenMirrors(const StreamSpec& spec,
                                                 const std::filesystem::path& local, bool offline,
                                                 std::function<uint64_t()> epoch = nullptr);

}  // namespace ferry::internal_stream
