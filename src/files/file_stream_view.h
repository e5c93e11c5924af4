// ViewAsStream: a FileDataset seen through the StreamingDataset interface, so that the native
// batch loader (ferry.DataLoader) reads a folder of files as it reads MDS shards.
//
// The view has one "stream" with three columns, in MDS's sorted order: `data` (the dataset's
// data_encoding(): jpeg, png or bytes, decided from all the listed files), `label` (int) and
// `path` (str). Iterate follows the FileDataset's own order (FileOrder) and fetch-ahead; a
// sample's id is the file's index in the listing. What has no meaning for files is refused with
// kUnimplemented: Plan (the MDS epoch plan) and resume_from (world-wide resumption); per-worker
// `skip` works.
//
// Thread-safety: as StreamingDataset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/files/file_dataset.h"
#include "ferry/result.h"
#include "ferry/stream/streaming_dataset.h"

namespace ferry {

/// `batch_size` is what the view reports as its order's batch size (the loader checks it).
Result<std::shared_ptr<StreamingDataset>> ViewAsStream(std::shared_ptr<FileDataset> files,
                                                       uint32_t batch_size);

}  // namespace ferry
