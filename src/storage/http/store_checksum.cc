#include "storage/http/store_checksum.h"

#include "base/ascii.h"
#include "base/hex.h"
#include "storage/base64.h"
#include "storage/http/resumable_get.h"

namespace ferry::http {
namespace {

// A base64 checksum of `bytes` bytes (Content-MD5, x-amz-checksum-*, x-goog-hash's) as hex;
// empty unless it decodes to that many.
std::string HexOfBase64(std::string_view base64, size_t bytes) {
  const auto decoded = Base64Decode(TrimAsciiWhitespace(base64));
  return decoded && decoded->size() == bytes ? ToHex(*decoded) : std::string();
}

size_t DigestBytes(ChecksumKind kind) {
  switch (kind) {
    case ChecksumKind::kMd5:
      return 16;
    case ChecksumKind::kCrc32:
    case ChecksumKind::kCrc32c:
      return 4;
    case ChecksumKind::kCrc64Nvme:
      return 8;
    case ChecksumKind::kNone:
      break;
  }
  return 0;
}

ObjectChecksum Checksum(ChecksumKind kind, std::string hex, std::string_view from) {
  if (hex.empty()) return {};
  return {.kind = kind, .hex = std::move(hex), .from = std::string(from)};
}

// x-amz-checksum-<name>, unless it is a multipart upload's composite of its parts' checksums.
ObjectChecksum FromAmzChecksum(const Headers& headers, ChecksumKind kind, std::string_view name) {
  const auto value = headers.Get(name);
  if (!value || value->find('-') != std::string_view::npos) return {};
  return Checksum(kind, HexOfBase64(*value, DigestBytes(kind)), name);
}

}  // namespace

bool IsMd5Hex(std::string_view text) {
  return text.size() == 32 &&
         text.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
}

std::string FromGoogHash(std::string_view value, std::string_view name) {
  const size_t bytes = DigestBytes(name == "md5"      ? ChecksumKind::kMd5
                                   : name == "crc32c" ? ChecksumKind::kCrc32c
                                                      : ChecksumKind::kNone);
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = TrimAsciiWhitespace(value.substr(0, comma));
    if (item.size() > name.size() && item.starts_with(name) && item[name.size()] == '=') {
      return HexOfBase64(item.substr(name.size() + 1), bytes);
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return {};
}

ObjectChecksum ChecksumFromS3Headers(const Headers& headers) {
  if (auto goog = headers.Get("x-goog-hash")) {
    if (auto crc = Checksum(ChecksumKind::kCrc32c, FromGoogHash(*goog, "crc32c"), "x-goog-hash");
        !crc.empty()) {
      return crc;
    }
    if (auto md5 = Checksum(ChecksumKind::kMd5, FromGoogHash(*goog, "md5"), "x-goog-hash");
        !md5.empty()) {
      return md5;
    }
  }
  if (auto type = headers.Get("x-amz-checksum-type"); !type || AsciiLower(*type) != "composite") {
    for (const auto& [kind, name] :
         {std::pair{ChecksumKind::kCrc32c, "x-amz-checksum-crc32c"},
          std::pair{ChecksumKind::kCrc64Nvme, "x-amz-checksum-crc64nvme"},
          std::pair{ChecksumKind::kCrc32, "x-amz-checksum-crc32"}}) {
      if (auto crc = FromAmzChecksum(headers, kind, name); !crc.empty()) return crc;
    }
  }
  // SSE-KMS (aws:kms, aws:kms:dsse) and SSE-C objects have ETags that are not their MD5.
  if (auto sse = headers.Get("x-amz-server-side-encryption"); sse && sse->starts_with("aws:kms")) {
    return {};
  }
  if (headers.Get("x-amz-server-side-encryption-customer-algorithm")) return {};
  const auto etag = headers.Get("ETag");
  if (!etag) return {};
  const std::string unquoted = UnquoteEtag(*etag);
  if (!IsMd5Hex(unquoted)) return {};
  return Checksum(ChecksumKind::kMd5, AsciiLower(unquoted), "ETag");
}

ObjectChecksum ChecksumFromAzureHeaders(int status, const Headers& headers) {
  const char* name = status == 206 ? "x-ms-blob-content-md5" : "Content-MD5";
  const auto value = headers.Get(name);
  if (!value) return {};
  return Checksum(ChecksumKind::kMd5, HexOfBase64(*value, 16), name);
}

}  // namespace ferry::http
