// SHA-256 and HMAC-SHA256 (OpenSSL), as request signing (SigV4, Azure Shared Key), payload
// hashes and the store cache's keys use them.
//
// Thread-safety: the functions are reentrant; a Sha256 belongs to one thread at a time.
#pragma once

#include <openssl/evp.h>

#include <string>
#include <string_view>

namespace ferry {

/// Incremental SHA-256, for hashing a body read in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view data);
  /// The lowercase hex digest; the object is spent afterwards.
  std::string HexDigest();

 private:
  EVP_MD_CTX* ctx_;
};

/// The lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

/// The raw 32-byte HMAC-SHA256 of `data` under `key`.
std::string HmacSha256(std::string_view key, std::string_view data);

}  // namespace ferry
