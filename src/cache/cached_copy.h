// CachedCopy: whether the file under a shard's name in a cache folder counts as that shard.
//
// A cached shard file counts only at the size index.json gives - and, when it was last changed
// before this boot, once its bytes are known to have survived the boot. Downloads are not
// fsynced (a cache can always fetch again, and the flush would halve epoch-1 throughput), so a
// power cut may leave a file short, with holes, or with blocks the disk never got; a file
// changed since boot is in the page cache or on disk, whatever the disk held before, and is
// trusted. A file from before the boot:
//   - with a digest record (digest_record.h): read once and compared with it, on its first use
//     after the boot (ExamineShard with `verify`, under the shard's download lock); a match is
//     noted in the record, so later uses in this boot read no more than the record;
//   - without one (written by a ferry that kept none): only holes are looked for - a file
//     downloaded in ranged parts was given its full size first, and comes back with holes where
//     its data was lost, on the filesystems that report holes (docs/streaming.md,
//     "Publishing").
// Anything damaged is downloaded again.
//
// Thread-safety: functions are reentrant; concurrent verifications of one file are harmless (the
// cache runs them under the download lock).
#pragma once

#include <string>

#include "cache/cache_layout.h"
#include "ferry/format/dataset_description.h"

namespace ferry::internal_cache {

struct CachedCopy {
  bool complete = false;
  /// Why a file that is there does not count; empty when none is there, or when it is only
  /// unverified.
  std::string damage;
  /// There at the right size, written before this boot, not yet compared with its digest record.
  bool unverified = false;
};

/// `shard`'s raw files (raw_data and companions) as the cache sees them: complete when all are;
/// the first file that is not, otherwise. With `verify`, unverified files are read and compared
/// with their records (the match noted in the record); without, they are reported unverified.
CachedCopy ExamineShard(const CacheLayout& layout, const ShardDescription& shard, bool verify);

}  // namespace ferry::internal_cache
