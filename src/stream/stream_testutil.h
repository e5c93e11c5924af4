// Helpers the stream layer's tests share.
#pragma once

#include <cstdint>
#include <cstring>

#include "ferry/metrics/metrics.h"
#include "ferry/stream/streaming_dataset.h"

namespace ferry::testing {

/// The id of a sample of the tests' {id: int, blob: bytes} datasets, whose columns are sorted:
/// blob, then id.
inline int64_t SampleId(const Sample& s) {
  int64_t v;
  std::memcpy(&v, s.fields[1].data(), sizeof v);
  return v;
}

/// Requests made to file:// stores so far (a remote folder standing in for a bucket).
inline int64_t FileRequests() { return metrics::Values()["/ferry/storage/file/requests"]; }

}  // namespace ferry::testing
