// GroupWebDatasetSamples: the samples of a WebDataset tar shard, from its members, by
// WebDataset's own rules (tar_file_iterator + group_by_keys):
//   - a member's key is its path up to the first dot of its last component, and the rest,
//     lower-cased, is the field ("a/b/k1.seg.PNG" is key "a/b/k1", field "seg.png");
//   - a member without such a dot, and a top-level "__*__" member, are skipped;
//   - consecutive members with one key make one sample; a key that comes back after another
//     starts a new sample;
//   - a field twice for one key is an error (kDataLoss naming the shard and the member).
// Only regular files reach here (ScanTar leaves out the rest).
//
// Thread-safety: a free function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "format/tar_scan.h"

namespace ferry::internal_format {

struct WebDatasetField {
  std::string name;  // the extension, lower-cased: "jpg", "seg.png"
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct WebDatasetSample {
  std::string key;
  std::vector<WebDatasetField> fields;  // in archive order
};

Result<std::vector<WebDatasetSample>> GroupWebDatasetSamples(const std::vector<TarMember>& members,
                                                             std::string_view shard);

/// The samples of the tar `archive` (a whole shard in memory): ScanTar, then grouped. `shard`
/// names it in errors.
Result<std::vector<WebDatasetSample>> ReadWebDatasetSamples(std::string_view archive,
                                                            std::string_view shard);

}  // namespace ferry::internal_format
