// Reading one sample of a raw shard that is not local yet, with two ranged GETs: the two offsets
// that bound the sample (8 bytes at 4 + 4i), then its record. This is how the first samples of
// an epoch arrive after one round trip for the index and two for a shard - not after a whole
// shard - while the prefetcher downloads the shard in the background.
//
// Thread-safety: reentrant.
#pragma once

#include <string>

#include "ferry/format/index.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"

namespace ferry::internal_stream {

/// The record of sample `index` of the raw shard `entry`, stored at `key` in `store`.
/// kDataLoss (naming the shard) when the offsets it reads are impossible.
Result<std::string> ReadRemoteRecord(ObjectStore& store, const std::string& key,
                                     const ShardEntry& entry, uint64_t index);

}  // namespace ferry::internal_stream
