// Uploading the parts of a multipart upload: many UploadPart requests in flight at once through
// Transport::Submit, each retried on its own, none buffered in memory (a part's body is read
// from the source as the transport sends it).
//
// The algorithm, run on the calling thread:
//   1. Start parts in order until `max_in_flight` are outstanding.
//   2. Wait for a completion (or for a retry's backoff to end). A success records the part's
//      ETag; a retryable failure (by code, see IsRetryable) schedules the part again after
//      BackoffForAttempt, within the policy's attempts and time for that part; any other
//      failure stops new starts.
//   3. Repeat until every part succeeded, or until, after a failure, nothing is in flight.
// Completions run on the transport's I/O thread and only queue their result; building, signing
// and judging requests happen on the calling thread.
//
// Create, Complete and Abort are the store's: this file only knows parts.
//
// Thread-safety: UploadParts is reentrant; `build` and `map_error` run on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ferry/result.h"
#include "storage/http/transport.h"
#include "storage/retry_policy.h"
#include "storage/s3/s3_metadata.h"

namespace ferry::internal_s3 {

/// S3's limits: at most 10,000 parts, each (but the last) at least 5 MiB, at most 5 GiB.
inline constexpr int kMaxParts = 10'000;
inline constexpr uint64_t kMinPartSize = uint64_t{5} << 20;
inline constexpr uint64_t kMaxPartSize = uint64_t{5} << 30;

struct PartPlan {
  uint64_t part_size = 0;
  int count = 0;
};

/// `preferred_part_size` (at least 1), grown in whole MiB when `object_size` would need more
/// than kMaxParts parts.
PartPlan PlanParts(uint64_t object_size, uint64_t preferred_part_size);

struct PartUploadOptions {
  uint64_t object_size = 0;
  PartPlan plan;
  int max_in_flight = 8;
  RetryPolicy retry;
  /// The signed UploadPart request for part `number` (1-based), bytes [offset, offset + size).
  /// Called again for every retry, so that each attempt is signed afresh.
  std::function<Result<http::Request>(int number, uint64_t offset, uint64_t size)> build;
  /// The Status for a reply with status >= 300.
  std::function<Status(const http::Response& response)> map_error;
  std::string url;  // the object's (redacted) URL, for messages
};

/// Every part, in part-number order, with its ETag; or the first error that ended the upload
/// ("<url>: part N of M: ..."). Returns only once nothing it started is in flight.
Result<std::vector<CompletedPart>> UploadParts(http::Transport& transport,
                                               const PartUploadOptions& options);

}  // namespace ferry::internal_s3
