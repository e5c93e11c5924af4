// WebDatasetFormat: the "webdataset" ShardFormat - a tar shard read in place. Opening it scans its
// headers (src/format/tar_scan.h) and groups its members into samples by WebDataset's rules
// (src/format/webdataset_samples.h): a sample is its `__key__` (a str) and one bytes field per
// member, named by the member's extension, in archive order. Samples whose members have the same
// extensions share one ShardConfig, owned by the reader.
//
// A shard whose size or sample count differs from its description is kDataLoss naming it, as is
// a tar WebDataset itself refuses (a field twice for one key). A sample cannot be read by range:
// where its members are is known only once the whole shard has been scanned.
//
// Thread-safety: stateless.
#pragma once

#include "ferry/format/shard_format.h"

namespace ferry::internal_format {

class WebDatasetFormat final : public ShardFormat {
 public:
  std::string_view name() const override { return "webdataset"; }
  Result<std::unique_ptr<ShardReader>> Open(const std::filesystem::path& path,
                                            const ShardDescription& shard) const override;
  Result<std::unique_ptr<ShardReader>> FromBuffer(std::string data, const ShardDescription& shard,
                                                  std::string origin) const override;
};

}  // namespace ferry::internal_format
