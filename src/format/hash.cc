#include "format/hash.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <memory>

#include "base/hex.h"

namespace ferry {
namespace {

struct OpensslName {
  std::string_view name;     // the reference's (hashlib) name
  std::string_view openssl;  // OpenSSL's EVP name
};

constexpr std::array<OpensslName, 12> kOpenssl = {{
    {"md5", "MD5"},
    {"sha1", "SHA1"},
    {"sha224", "SHA224"},
    {"sha256", "SHA256"},
    {"sha384", "SHA384"},
    {"sha512", "SHA512"},
    {"sha3_224", "SHA3-224"},
    {"sha3_256", "SHA3-256"},
    {"sha3_384", "SHA3-384"},
    {"sha3_512", "SHA3-512"},
    {"blake2b", "BLAKE2B-512"},
    {"blake2s", "BLAKE2S-256"},
}};

constexpr std::array<std::string_view, 5> kXxh = {"xxh32", "xxh64", "xxh3_64", "xxh128",
                                                  "xxh3_128"};

std::string KnownNames() {
  std::string out;
  for (const auto& n : kOpenssl) out += std::string(n.name) + ", ";
  for (size_t i = 0; i < kXxh.size(); ++i)
    out += std::string(kXxh[i]) + (i + 1 < kXxh.size() ? ", " : "");
  return out;
}

Result<std::string> OpensslHex(std::string_view openssl_name, std::string_view data) {
  std::unique_ptr<EVP_MD, void (*)(EVP_MD*)> md(
      EVP_MD_fetch(nullptr, std::string(openssl_name).c_str(), nullptr), EVP_MD_free);
  if (!md) return InternalError(fmt::format("OpenSSL has no {} digest", openssl_name));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, md.get(), nullptr) != 1) {
    return InternalError(fmt::format("OpenSSL {} digest failed", openssl_name));
  }
  return ToHex(std::string_view(reinterpret_cast<const char*>(digest), len));
}

}  // namespace

bool IsKnownHash(std::string_view algorithm) {
  return std::any_of(kOpenssl.begin(), kOpenssl.end(),
                     [&](const auto& n) { return n.name == algorithm; }) ||
         std::find(kXxh.begin(), kXxh.end(), algorithm) != kXxh.end();
}

Status ValidateHashNames(const std::vector<std::string>& algorithms) {
  for (const auto& a : algorithms) {
    if (!IsKnownHash(a)) {
      return InvalidArgumentError(fmt::format("unknown hash '{}' (known: {})", a, KnownNames()));
    }
  }
  if (!std::is_sorted(algorithms.begin(), algorithms.end())) {
    return InvalidArgumentError(fmt::format("hashes must be listed in sorted order, got [{}]",
                                            fmt::join(algorithms, ", ")));
  }
  return Status::Ok();
}

Result<std::string> HashHex(std::string_view algorithm, std::string_view data) {
  for (const auto& n : kOpenssl) {
    if (n.name == algorithm) return OpensslHex(n.openssl, data);
  }
  if (algorithm == "xxh32") return fmt::format("{:08x}", XXH32(data.data(), data.size(), 0));
  if (algorithm == "xxh64") return fmt::format("{:016x}", XXH64(data.data(), data.size(), 0));
  if (algorithm == "xxh3_64") return fmt::format("{:016x}", XXH3_64bits(data.data(), data.size()));
  if (algorithm == "xxh128" || algorithm == "xxh3_128") {
    const XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
    return fmt::format("{:016x}{:016x}", h.high64, h.low64);
  }
  return InvalidArgumentError(
      fmt::format("unknown hash '{}' (known: {})", algorithm, KnownNames()));
}

}  // namespace ferry
