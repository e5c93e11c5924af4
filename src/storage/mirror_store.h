// MirrorStore: one dataset held in several places (the source bucket in S3, a staged copy in
// ADLS, a local folder), read as one store whose keys are paths inside the dataset.
//
// Each read goes to the first mirror in preference order that is not demoted - or to a faster
// one behind it: a mirror measured at less than half the speed of a later one yields to it, and
// now and then a read measures a mirror not read lately, if it costs no more
// (src/storage/source_speeds.h). A mirror that fails (after two attempts, or at once when
// another read found it down meanwhile: its store's own retries are for the last mirror in the
// order) or stalls (nothing for 5 s, rather than the transport's 30 s) is demoted, and the read
// goes on from the next mirror at the byte it had reached: a range request for the rest, so the
// caller's sink sees every byte once, in order. A mirror that lacks the object (404: a partly
// staged copy) passes it on to the next without being demoted, and so does one whose copy has
// another size than the index gives (MirrorOptions::size_of) - from then on, for that object; when
// bytes of that copy had reached the caller already, the read fails with kDataLoss first, so
// that the caller's retry starts over at the next mirror. A demoted mirror is asked again once
// its demotion ends (the first read after it is the probe): 5 s after its first failure, doubling
// with each failure in a row up to 5 minutes; a success ends it.
//
// Identity is the caller's to check once, at open (MirrorsOfOneDataset: every mirror's
// index.json has the same bytes, or the versions of copies found the same before); after that a
// shard's size and hashes come from index.json, whichever mirror serves it. So a read reports no
// etag or time (each mirror has its own, and a shard whose parts came from two mirrors is still one
// object), and the store's checksum only when one mirror sent every byte of the read.
//
// Counters, per mirror (its position in the list, 0 the preferred):
//   /ferry/mirror/<i>/bytes_read  bytes it delivered
//   /ferry/mirror/<i>/failovers   reads it failed that another mirror took over
//   /ferry/mirror/<i>/missing     reads of objects it lacks (404) that another mirror served
//   /ferry/mirror/<i>/wrong_size  objects it holds in another size than MirrorOptions::size_of
// and per source (SourceLabel: several mirrors may share one; SourceCounterName):
//   /ferry/source/<label>/bytes_read   bytes it delivered (what egress is paid on)
//   /ferry/source/<label>/over_budget  reads it passed on, or broke off, at its budget
//
// Egress budgets (SourceEgress::budget, and epoch_budget per epoch) are checked before a read goes
// to a mirror and as its bytes arrive: a mirror whose source has spent its budget passes the read
// on - from the byte reached, like a failure, but without demotion - and when no mirror is left the
// read fails with kResourceExhausted naming the budgets. A chunk is delivered only while the
// source's spend, with the chunks this process's other reads are delivering, is under its budget:
// the process ends at most one chunk past it (others' counts are read every 200 ms).
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "storage/source_health.h"

namespace ferry {

/// What reading from one source costs, and how much of it a job may spend (docs/sources.md,
/// "Egress").
struct SourceEgress {
  /// Names the source in the counters and reports: a region or cloud ("aws-us-east-1"). Empty:
  /// the store and bucket ("s3://source").
  std::string label;
  double usd_per_gb = 0;  // its egress price, for the estimate of what reading cost
  /// Bytes it may deliver into the cache folder from the open on, by every process of the node
  /// (MirrorOptions::node_total); then reads prefer the other mirrors, and with none left fail
  /// with kResourceExhausted instead of spending more.
  std::optional<uint64_t> budget;
  /// The same for each epoch (MirrorOptions::epoch): bytes delivered since this process began
  /// reading the epoch, by every process of the node.
  std::optional<uint64_t> epoch_budget;
};

struct Mirror {
  std::shared_ptr<ObjectStore> store;
  std::string prefix;  // the dataset's folder in the store: "" or ending in '/'
  SourceEgress egress;
  /// Left out of this open (MirrorsOfOneDataset): never read, but still in its place, so that
  /// the store's URL (the first mirror's) and the counters' positions stay what was configured.
  bool left_out = false;
};

struct MirrorOptions {
  /// How long a mirror that failed is passed over (src/storage/source_health.h).
  DemotionOptions demotion;
  /// The node-wide value of a counter (summed over the processes that read the cache folder:
  /// ferry/metrics/node_metrics.h), against which budgets are kept. Null: this process's own.
  std::function<int64_t(const std::string& counter)> node_total;
  /// The epoch this process reads now, for SourceEgress::epoch_budget. Null: one epoch.
  std::function<uint64_t()> epoch;
  /// The size the dataset's index gives an object (keyed as reads are: paths inside the
  /// dataset), nullopt for one it does not name. A mirror whose copy of one has another size is
  /// passed over for that object from then on; without this, the caller's retries of the
  /// download could go back to it forever. Null: no sizes known.
  std::function<std::optional<uint64_t>(std::string_view key)> size_of;
};

/// The label a mirror's egress is counted under: its own, else "<scheme>://<bucket>" of `url`
/// (the whole URL less its path, for a local folder).
std::string SourceLabel(const SourceEgress& egress, std::string_view url);

/// The counter `what` of the source `label`: "/ferry/source/<label>/<what>", the label's
/// characters other than letters, digits, '-' and '.' made '_' ("s3://source" is s3___source).
std::string SourceCounterName(std::string_view label, std::string_view what);

/// A read-only store over `mirrors` (at least one), in preference order.
Result<std::shared_ptr<ObjectStore>> MakeMirrorStore(std::vector<Mirror> mirrors,
                                                     MirrorOptions options = {});

/// The version (ObjectVersion) of each mirror's copy of an object, by the copy's URL (redacted).
using CopyVersions = std::map<std::string, std::string>;

struct OneDataset {
  std::vector<Mirror> mirrors;
  /// The versions of the copies read and found the same now, for the caller to keep and pass
  /// as `known` at the next open (copies without a version are left out); empty when the
  /// HEADs showed `known` still holds.
  CopyVersions versions;
  /// One version for the copies together (of those not left out): another when any of them
  /// changed. The store's reads report none (a read may come from any mirror), so this is what
  /// tells a cached copy of `key` is still current. Empty when a copy has no version.
  std::string version;
  /// The HEADs showed every copy at the version `known` gives it: none was read.
  bool confirmed = false;
};

/// `mirrors`, those whose `key` (index.json) cannot be read now (down, or without a copy) marked
/// left_out for this open, with a warning: their shards could not be trusted to be the same.
/// The others must hold the same bytes. When `known` is given, each copy is asked its version
/// first (a HEAD each, all at once): if every one answers with the version `known` gives it,
/// they are what was found the same before, and no copy is read. Otherwise every copy is read,
/// all at once, and compared by digest - unless `read_copies` is false: then the result is not
/// `confirmed`, and says nothing more. kFailedPrecondition naming both URLs when two copies
/// differ: mirrors must hold one dataset; the first one's error when none answers.
Result<OneDataset> MirrorsOfOneDataset(std::vector<Mirror> mirrors, std::string_view key,
                                       const CopyVersions& known = {}, bool read_copies = true);

}  // namespace ferry
