// The shard list of a folder of WebDataset tars that has none (no index.json): the list `ferry
// index` writes (src/format/webdataset_index.h), made by reading every shard once with the code
// that streams it. LoadIndex makes one when a remote folder holds tars and no index.json, and
// keeps it in the cache folder with the version of the listing it was made from
// (TarListingVersion) and the version of each shard: a later open lists the folder (one request)
// and reads no shard unless the listing changed; then only the shards that changed are read
// again.
//
// Thread-safety: free functions; DescribeTarShards calls `count` from up to `jobs` threads at
// once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "ferry/cache/shard_cache.h"
#include "ferry/format/dataset_description.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "format/webdataset_index.h"

namespace ferry::internal_cache {

/// The tar shards directly in `prefix` of `store` (a folder key ending in '/', or empty), sorted
/// by key; kNotFound, naming `url` (the folder's), when there are none.
Result<std::vector<ObjectInfo>> ListTarShards(ObjectStore& store, const std::string& prefix,
                                              const std::string& url);

/// The tars named `names` (a shard pattern's, src/format/shard_pattern.h) of the folder `prefix`,
/// in that order: kInvalidArgument for a name that is not a tar's, kNotFound naming the URL of
/// the first ones missing from the folder (the folder's is `url`).
Result<std::vector<ObjectInfo>> SelectTarShards(ObjectStore& store, const std::string& prefix,
                                                const std::string& url,
                                                const std::vector<std::string>& names);

/// Each tar's version (ObjectVersion) by its name relative to `prefix`.
std::map<std::string, std::string> TarVersions(const std::vector<ObjectInfo>& tars,
                                               const std::string& prefix);

/// The version of a list made from `tars`: another one when a tar is added, removed, resized or
/// rewritten (a new etag, or a new modification time where the store has no etag).
std::string TarListingVersion(const std::vector<ObjectInfo>& tars);

/// Counts shard k of a listing; `stop` is requested once another shard has failed.
using TarCounter =
    std::function<Result<internal_format::TarShardCount>(size_t k, std::stop_token stop)>;

/// The shard list of `tars` (their keys relative to `prefix`), shard k counted by `count(k)`,
/// `jobs` at a time. The first failure in shard order is the result (one that the stop after a
/// failure caused, kCancelled, only when there is no other).
Result<DatasetDescription> DescribeTarShards(const std::vector<ObjectInfo>& tars,
                                             const std::string& prefix, uint32_t jobs,
                                             const TarCounter& count);

/// DescribeTarShards of the tars at `prefix` in `remote`: a plain tar is fetched through a
/// ShardCache on `options` (so it stays in the cache folder, within its cache_limit, for the
/// epoch that follows); a gzipped one, whose tar is not sized until it is decompressed, is
/// read into memory and fetched into the cache again when streamed.
Result<DatasetDescription> ScanTarShards(ObjectStore* remote, const std::string& prefix,
                                         const std::vector<ObjectInfo>& tars,
                                         const ShardCacheOptions& options, uint32_t jobs);

}  // namespace ferry::internal_cache
