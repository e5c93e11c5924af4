#include "storage/jwt.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>

#include "storage/base64.h"

namespace ferry::internal_storage {
namespace {

// An encrypted key must fail to load, not prompt on the terminal for its passphrase.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return -1; }

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

Result<std::string> SignJwtRs256(const nlohmann::json& header, const nlohmann::json& claims,
                                 std::string_view private_key_pem, std::string_view key_source) {
  std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())));
  if (!bio) return ResourceExhaustedError("out of memory reading a private key");
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, &NoPassphrase, nullptr));
  if (!key) {
    return InvalidArgumentError(fmt::format(
        "{}: holds no readable PEM private key (an unencrypted \"PRIVATE KEY\" or \"RSA PRIVATE "
        "KEY\" block is needed)",
        key_source));
  }
  if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
    return InvalidArgumentError(
        fmt::format("{}: the private key is not an RSA key (RS256 needs one)", key_source));
  }
  const std::string signing_input =
      Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(claims.dump());
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  size_t size = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSignUpdate(ctx.get(), signing_input.data(), signing_input.size()) != 1 ||
      EVP_DigestSignFinal(ctx.get(), nullptr, &size) != 1) {
    return InternalError(fmt::format("{}: OpenSSL could not sign with the key", key_source));
  }
  std::string signature(size, '\0');
  if (EVP_DigestSignFinal(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size) !=
      1) {
    return InternalError(fmt::format("{}: OpenSSL could not sign with the key", key_source));
  }
  signature.resize(size);
  return signing_input + "." + Base64UrlEncode(signature);
}

Result<nlohmann::json> UnverifiedJwtClaims(std::string_view token) {
  const size_t first = token.find('.');
  const size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return InvalidArgumentError("the token is not a JWT (three parts separated by '.')");
  }
  const auto payload = Base64UrlDecode(token.substr(first + 1, second - first - 1));
  if (!payload) return InvalidArgumentError("the token's claims are not base64url");
  auto claims = nlohmann::json::parse(*payload, nullptr, /*allow_exceptions=*/false);
  if (!claims.is_object()) return InvalidArgumentError("the token's claims are not a JSON object");
  return claims;
}

}  // namespace ferry::internal_storage
