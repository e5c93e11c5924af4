// The whole-object checksums stores send with a GET for free, as ObjectInfo::checksum carries
// them: a download that hashes its bytes as they land (src/cache/download_digest.h) checks its
// body against them without validate_hash.
//
//   S3 (and S3-compatible stores)  x-amz-checksum-crc32c / -crc64nvme / -crc32, asked for with
//                                  x-amz-checksum-mode: ENABLED, on a reply of the whole object
//                                  (not of a range): the checksum it was uploaded with, and
//                                  CRC64NVME on every object uploaded since 2025 without one. A
//                                  multipart upload's COMPOSITE checksum ("<base64>-<parts>") is
//                                  one of its parts' checksums, not of its bytes: skipped.
//                                  Else the ETag, when it is the object's MD5: 32 hex digits (a
//                                  multipart upload's ends in "-<parts>"), and the object is not
//                                  encrypted with SSE-KMS or a customer key (whose ETags are not
//                                  MD5s).
//   GCS (XML API)                  x-goog-hash "crc32c=<base64>" (every object, composite ones
//                                  included), "md5=<base64>" (not composite ones)
//   Azure Blob                     Content-MD5 on a whole-blob 200, x-ms-blob-content-md5 on a
//                                  206 (the whole blob's; Content-MD5 there would be the
//                                  range's, and only when asked for) - set when the blob was
//                                  uploaded in one request, or by the uploader. Azure keeps no
//                                  CRC64 of a blob: x-ms-content-crc64 on a GET is the range's,
//                                  computed for ranges of at most 4 MiB when asked.
// Of several, the cheapest to compute: CRC32C (a CPU instruction), CRC64NVME, CRC32, MD5.
//
// A checksum that merely looks like one (an S3-compatible store's ETag that is not an MD5) is
// caught by the download: two downloads that agree with each other and not with it disable the
// check for that store (src/cache/shard_downloader.cc).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "ferry/storage/object_store.h"
#include "storage/http/http_types.h"

namespace ferry::http {

/// The request header that asks S3 for the object's x-amz-checksum-* (S3 proper and stores that
/// speak its API; not GCS, whose XML API has x-goog-hash).
inline constexpr std::string_view kS3ChecksumModeHeader = "x-amz-checksum-mode";

/// The checksum an S3 (or GCS XML API) GET's `headers` give for the whole object; empty when
/// they give none.
ObjectChecksum ChecksumFromS3Headers(const Headers& headers);

/// The same for an Azure Blob GET answered with `status` (200 or 206).
ObjectChecksum ChecksumFromAzureHeaders(int status, const Headers& headers);

/// 32 hex digits, either case: what an ETag that is an object's MD5 looks like.
bool IsMd5Hex(std::string_view text);

/// `name` ("crc32c" or "md5") out of a GCS x-goog-hash value ("crc32c=...,md5=..."), as hex;
/// empty when absent or malformed.
std::string FromGoogHash(std::string_view value, std::string_view name);

}  // namespace ferry::http
