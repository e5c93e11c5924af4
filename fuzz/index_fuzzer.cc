// Fuzzes index.json parsing: any input must give an Index or a Status, never a crash, a hang or
// a read out of bounds; an accepted index must survive serialization and parse back equal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ferry/format/index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto index = ferry::ParseIndex(text, "fuzz");
  if (!index) return 0;
  const std::string again = ferry::SerializeIndex(*index);
  auto reparsed = ferry::ParseIndex(again, "fuzz-reserialized");
  if (!reparsed || reparsed->shards.size() != index->shards.size() ||
      ferry::SerializeIndex(*reparsed) != again) {
    std::abort();  // serialization must round-trip whatever the parser accepted
  }
  return 0;
}
