// MdsFormat: the "mds" ShardFormat - MdsShardReader for local shards, and a sample of a remote
// raw shard read by range: its two offsets from the header, then its record; or its whole offset
// table once (ReadSpans), then each record.
//
// Thread-safety: stateless.
#pragma once

#include "ferry/format/shard_format.h"

namespace ferry::internal_format {

class MdsFormat final : public ShardFormat {
 public:
  std::string_view name() const override { return "mds"; }
  Result<std::unique_ptr<ShardReader>> Open(const std::filesystem::path& path,
                                            const ShardDescription& shard) const override;
  Result<std::unique_ptr<ShardReader>> FromBuffer(std::string data, const ShardDescription& shard,
                                                  std::string origin) const override;
  Result<std::optional<RangedSample>> ReadByRange(const RangeRead& read,
                                                  const ShardDescription& shard,
                                                  uint32_t i) const override;
  bool ReadsByRange() const override { return true; }
  Result<std::shared_ptr<const SampleSpans>> ReadSpans(
      const RangeRead& read, const ShardDescription& shard) const override;
};

}  // namespace ferry::internal_format
