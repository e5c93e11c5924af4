// The whole-object checksums stores send with every GET for free, as ObjectInfo::md5 carries
// them: a download that hashes its bytes as they land (src/cache/download_digest.h) checks its
// body against them without validate_hash.
//
//   S3 (and S3-compatible stores)  ETag, when it is the object's MD5: 32 hex digits (a multipart
//                                  upload's ends in "-<parts>"), and the object is not encrypted
//                                  with SSE-KMS or a customer key (whose ETags are not MD5s)
//   GCS (XML API)                  x-goog-hash "md5=<base64>" (absent for composite objects)
//   Azure Blob                     Content-MD5 on a whole-blob 200, x-ms-blob-content-md5 on a
//                                  206 (the whole blob's; Content-MD5 there would be the
//                                  range's, and only when asked for) - set when the blob was
//                                  uploaded in one request, or by the uploader
//
// An ETag that merely looks like an MD5 (some S3-compatible stores) is caught by the download:
// two downloads that agree with each other and not with the ETag disable the check for that
// store (src/cache/shard_downloader.cc).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "storage/http/http_types.h"

namespace ferry::http {

/// The checksum an S3 (or GCS XML API) GET's `headers` give for the whole object, with the
/// header it came from; empty when they give none that is an MD5.
struct StoreMd5 {
  std::string hex;   // lowercase, 32 digits; empty when none
  std::string from;  // "ETag", "x-goog-hash", "Content-MD5", "x-ms-blob-content-md5"
};

StoreMd5 Md5FromS3Headers(const Headers& headers);

/// 32 hex digits, either case: what an ETag that is an object's MD5 looks like.
bool IsMd5Hex(std::string_view text);

/// The same for an Azure Blob GET answered with `status` (200 or 206).
StoreMd5 Md5FromAzureHeaders(int status, const Headers& headers);

/// "md5=<base64>" out of a GCS x-goog-hash value ("crc32c=...,md5=..."), as hex; empty when
/// absent or malformed.
std::string Md5FromGoogHash(std::string_view value);

}  // namespace ferry::http
