// Copying objects between any two stores, for `ferry cp` and `ferry sync`.
//
// One object: local -> remote uploads from the file (the store splits it into parallel parts);
// remote -> local downloads to a temporary file renamed into place; remote -> remote streams
// through memory when small and through a temporary spool file when large, so a large object
// never sits whole in memory. After each copy the destination's size is checked.
//
// Many objects: a fixed number of worker threads take the plan in order; a failure of one
// object is recorded and the others go on - except when the destination itself is missing (a
// bucket or container that does not exist: a write answered kNotFound), where every other object
// would fail the same way, so the copy stops there with that one error.
//
// Stopping: a stop request (Ctrl+C, through cli/interrupt.h) ends the copies in flight within
// about a second (remote reads call their sink at least once a second; uploads read their
// source in parts), leaves no partial file at a local destination and no multipart upload
// behind, and starts no new one. What was copied stays copied.
//
// Thread-safety: CopyAll runs its own std::jthread workers and joins them before returning.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
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
  uint64_t objects = 0;  // copied
  uint64_t bytes = 0;    // copied
  std::vector<CopyFailure> failures;
  /// The first kNotFound of a write to the destination: the copy stopped there.
  std::optional<Status> destination_missing;
  /// True when a stop was requested before every item was done.
  bool stopped = false;
};

/// The report as JSON (`--json` of cp and sync): {"objects", "planned", "bytes", "seconds",
/// "failed": [{"src", "dst", "error"}], "stopped"}.
nlohmann::ordered_json CopyReportJson(const CopyReport& report, size_t planned, double seconds);

/// Every object below `src_prefix` (recursively), paired with the key it gets below `dst_prefix`.
Result<std::vector<CopyItem>> PlanFolderCopy(ObjectStore& src, const std::string& src_prefix,
                                             const std::string& dst_prefix);

/// Copies one object and checks the destination's size. Returns the bytes copied; kCancelled
/// when `stop` was requested first.
Result<uint64_t> CopyObject(ObjectStore& src, std::string_view src_key, ObjectStore& dst,
                            std::string_view dst_key, std::stop_token stop = {});

/// Copies every item with `jobs` workers. `progress(objects_done, bytes_done)` is called after
/// each object (from worker threads, serialized). Items not done when `stop` is requested or the
/// destination turns out missing are neither copied nor failures.
CopyReport CopyAll(ObjectStore& src, ObjectStore& dst, const std::vector<CopyItem>& items,
                   size_t jobs, const std::function<void(uint64_t, uint64_t)>& progress,
                   std::stop_token stop = {});

/// The most objects `ferry cp` and `ferry sync` copy at once (--jobs): each is a thread, and
/// 100000 of them would exhaust the process before the link.
inline constexpr int kMaxCopyJobs = 1024;

/// One error for a copy of `planned` objects that stopped on a missing destination
/// (CopyReport::destination_missing), naming `dst_url`, what the copy wrote into, once: kNotFound.
Status DestinationMissingError(const CopyReport& report, size_t planned, std::string_view dst_url);

/// What `ferry cp` and `ferry sync` print after Ctrl+C: how much of the plan was not copied and
/// the command that copies the rest (`resume`: its words, quoted here for a shell).
std::string InterruptedLine(const CopyReport& report, const std::vector<CopyItem>& items,
                            const std::vector<std::string>& resume);

}  // namespace ferry
