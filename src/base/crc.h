// The cyclic redundancy checks object stores keep for whole objects, which a download checks
// its bytes against for free (src/storage/http/store_checksum.h):
//   CRC32      (IEEE 802.3, zlib's)  S3 x-amz-checksum-crc32
//   CRC32C     (Castagnoli)          S3 x-amz-checksum-crc32c, GCS x-goog-hash crc32c
//   CRC64NVME  (the NVMe spec's)     S3 x-amz-checksum-crc64nvme, which S3 adds to every object
//                                    uploaded without a checksum of its own
// All three are reflected, start from all ones and end inverted, so a CRC continues where the
// last call left it: Crc32c(Crc32c(0, a), b) == Crc32c(0, a + b).
//
// Tables of eight slices (a byte each per step, ~2 GB/s on one core); CRC32C uses the x86 CRC32
// instruction where the CPU has SSE4.2 (several times faster).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry {

uint32_t Crc32(uint32_t crc, std::string_view data);
uint32_t Crc32c(uint32_t crc, std::string_view data);
uint64_t Crc64Nvme(uint64_t crc, std::string_view data);

}  // namespace ferry
