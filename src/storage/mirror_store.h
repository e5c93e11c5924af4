// MirrorStore: one dataset held in several places (the source bucket in S3, a staged copy in
// ADLS, a local folder), read as one store whose keys are paths inside the dataset.
//
// Each read goes to the first mirror in preference order that is not demoted. A mirror that
// fails (after two attempts, or at once when another read found it down meanwhile: its store's
// own retries are for the last mirror in the order) or stalls past its store's timeout is
// demoted, and the read goes on from the next mirror at the byte it had reached: a range
// request for the rest, so the caller's sink sees every byte once, in order. A mirror that lacks
// the object (404: a partly staged copy) passes it on to the next without being demoted. A demoted
// mirror is asked again once its demotion ends (the first read after it is the probe): 5 s after
// its first failure, doubling with each failure in a row up to 5 minutes; a success ends it.
//
// Identity is the caller's to check once, at open (MirrorsOfOneDataset: every mirror's
// index.json has the same bytes); after that a shard's size and hashes come from index.json,
// whichever mirror serves it. So a read reports no etag or time (each mirror has its own, and a
// shard whose parts came from two mirrors is still one object), and the store's checksum only
// when one mirror sent every byte of the read.
//
// Counters, per mirror (its position in the list, 0 the preferred):
//   /ferry/mirror/<i>/bytes_read  bytes it delivered
//   /ferry/mirror/<i>/failovers   reads it failed that another mirror took over
//   /ferry/mirror/<i>/missing     reads of objects it lacks (404) that another mirror served
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "storage/source_health.h"

namespace ferry {

struct Mirror {
  std::shared_ptr<ObjectStore> store;
  std::string prefix;  // the dataset's folder in the store: "" or ending in '/'
  /// Left out of this open (MirrorsOfOneDataset): never read, but still in its place, so that
  /// the store's URL (the first mirror's) and the counters' positions stay what was configured.
  bool left_out = false;
};

/// How long a mirror that failed is passed over (src/storage/source_health.h).
using MirrorOptions = DemotionOptions;

/// A read-only store over `mirrors` (at least one), in preference order.
Result<std::shared_ptr<ObjectStore>> MakeMirrorStore(std::vector<Mirror> mirrors,
                                                     MirrorOptions options = {});

/// `mirrors`, those whose `key` (index.json) cannot be read now (down, or without a copy) marked
/// left_out for this open, with a warning: their shards could not be trusted to be the same.
/// kFailedPrecondition naming both URLs when two that answer differ: mirrors must hold one
/// dataset; the first one's error when none answers.
Result<std::vector<Mirror>> MirrorsOfOneDataset(std::vector<Mirror> mirrors, std::string_view key);

}  // namespace ferry
