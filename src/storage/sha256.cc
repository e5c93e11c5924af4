#include "storage/sha256.h"

#include <openssl/hmac.h>

#include <cstdlib>

#include "base/hex.h"

namespace ferry {

// OpenSSL fails these calls only when it cannot allocate: nothing to recover.
Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) std::abort();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(std::string_view data) {
  if (EVP_DigestUpdate(ctx_, data.data(), data.size()) != 1) std::abort();
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx_, digest, &size) != 1) std::abort();
  return ToHex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

std::string Sha256Hex(std::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.HexDigest();
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out,
           &size) == nullptr) {
    std::abort();
  }
  return std::string(reinterpret_cast<const char*>(out), size);
}

}  // namespace ferry
