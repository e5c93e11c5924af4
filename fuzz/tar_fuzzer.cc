// Fuzzes the tar scan and WebDataset's grouping of its members: any input is an error or a list
// of members that lie inside the input, whatever the headers claim.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/tar_scan.h"
#include "format/webdataset_samples.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view archive(reinterpret_cast<const char*>(data), size);
  auto members = ferry::internal_format::ScanTar(archive, "fuzz.tar");
  if (!members.ok()) return 0;
  for (const auto& m : *members) {
    if (m.offset > size || m.size > size - m.offset) std::abort();
  }
  auto samples = ferry::internal_format::GroupWebDatasetSamples(*members, "fuzz.tar");
  if (samples.ok()) {
    for (const auto& s : *samples) {
      if (s.fields.empty()) std::abort();
    }
  }
  return 0;
}
