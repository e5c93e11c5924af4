#include "storage/http/store_checksum.h"

#include "base/ascii.h"
#include "base/hex.h"
#include "storage/base64.h"
#include "storage/http/resumable_get.h"

namespace ferry::http {
namespace {

// A base64 MD5 (Content-MD5 and its kin) as hex; empty unless it is 16 bytes.
std::string HexOfBase64Md5(std::string_view base64) {
  const auto bytes = Base64Decode(TrimAsciiWhitespace(base64));
  return bytes && bytes->size() == 16 ? ToHex(*bytes) : std::string();
}

}  // namespace

bool IsMd5Hex(std::string_view text) {
  return text.size() == 32 &&
         text.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
}

std::string Md5FromGoogHash(std::string_view value) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = TrimAsciiWhitespace(value.substr(0, comma));
    if (item.starts_with("md5=")) return HexOfBase64Md5(item.substr(4));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return {};
}

StoreMd5 Md5FromS3Headers(const Headers& headers) {
  if (auto goog = headers.Get("x-goog-hash")) {
    std::string hex = Md5FromGoogHash(*goog);
    if (!hex.empty()) return {.hex = std::move(hex), .from = "x-goog-hash"};
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
  return {.hex = AsciiLower(unquoted), .from = "ETag"};
}

StoreMd5 Md5FromAzureHeaders(int status, const Headers& headers) {
  const char* name = status == 206 ? "x-ms-blob-content-md5" : "Content-MD5";
  const auto value = headers.Get(name);
  if (!value) return {};
  std::string hex = HexOfBase64Md5(*value);
  if (hex.empty()) return {};
  return {.hex = std::move(hex), .from = name};
}

}  // namespace ferry::http
