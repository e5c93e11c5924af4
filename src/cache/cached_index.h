// The index.json of a cache folder, kept in step with the remote it came from (LoadIndex in
// include/ferry/cache/shard_cache.h).
//
// A cache folder records in .ferry/origin.json the remote that filled it and the version of the
// remote index.json that its copy is (ObjectVersion: the store's etag, or the modification time
// where the store has no etag). Opening it:
//   - for another remote is an error naming both: the shards of one dataset must never be served
//     as those of another (two datasets often share shard names);
//   - asks the remote for the index's version (a HEAD), or takes the one the caller gives
//     (LoadIndexOptions::index_version: a mirrored stream's, src/stream/stream_mirrors.h); the
//     same version reads the cached copy;
//     another one (or none cached) fetches the index under the folder's cache.lock, so that the
//     processes opening it together fetch it once (those that waited find the new copy and
//     check it with a HEAD), drops the cached shard files the new index does not describe
//     exactly (same name, size and a digest in common: without digests there is no telling a
//     rewritten shard of the same size, so it goes), then replaces index.json and the record;
//   - offline, reads the cached copy without asking.
// A fetched index.json that does not parse, or a reply that is another range than asked, is
// fetched again, 3 times in all (the same text twice ends it): a body cut short with a
// Content-Length that agrees, or an HTML page with 200, is the way's fault, not the index's.
// A folder filled before the record existed has no record: its index is compared with the
// remote's and adopted (or replaced, as above).
// Every process reads the cached index.json through its binary form, .ferry/index.bin
// (src/format/binary_index.h): the first one to parse the JSON writes it, the others decode it in
// milliseconds. It names the JSON bytes it was made from; for other bytes, or damaged, the JSON
// is parsed again and the binary form replaced.
// A remote folder of WebDataset tars without index.json gets a list made by reading each shard
// once (src/cache/tar_shard_list.h); its version is that of the folder's listing (a LIST instead
// of the HEAD), and a changed listing reads again - after dropping their cached files - only
// the shards that are new or changed.
//
// Thread-safety: functions are reentrant; concurrent openers serialize on cache.lock.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_layout.h"
#include "cache/file_lock.h"
#include "ferry/format/index.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry::internal_cache {

struct CacheOrigin {
  std::string remote;         // the dataset's URL (redacted), as the store writes it
  std::string index_version;  // ObjectVersion of the index.json the folder holds a copy of
  /// A folder of WebDataset tars without index.json (src/cache/tar_shard_list.h): index_version
  /// is TarListingVersion of the listing the cached list was made from, and this each shard's
  /// version in it, which tells the shards that changed since. Empty otherwise.
  std::map<std::string, std::string> shard_versions;
};

/// The folder's cache.lock, held exclusive (its folder made first): what the processes of a node
/// fetch a new index under, one at a time, and eviction takes.
Result<FileLock> LockCacheFolder(const CacheLayout& layout);

/// The record, nullopt when the folder has none; kDataLoss for one that is not ours.
Result<std::optional<CacheOrigin>> ReadCacheOrigin(const CacheLayout& layout);
Status WriteCacheOrigin(const CacheLayout& layout, const CacheOrigin& origin);

/// The description of the folder's index.json, through its binary form (see the file comment).
/// kNotFound when the folder has no index.json. A folder that cannot be written is only read.
Result<DatasetDescription> ReadCachedIndex(const CacheLayout& layout);

/// Writes the binary form of `index`, parsed from the index.json `text` of the folder, for the
/// processes that open the folder next. A failure is logged: the JSON is still there.
void WriteBinaryIndex(const CacheLayout& layout, std::string_view text,
                      const DatasetDescription& index);

/// Basenames of the shard files (raw and compressed) that `before` names and `after` does not
/// describe exactly (see the file comment).
std::vector<std::string> FilesNoLongerDescribed(const DatasetDescription& before,
                                                const DatasetDescription& after);

}  // namespace ferry::internal_cache
