// Throwaway RSA keys and self-signed certificates for tests of signed assertions (JWTs for
// Entra ID and Google), made with OpenSSL at run time: no key material lives in the repository.
// Test-only.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace ferry::testing {

/// An owned EVP_PKEY.
class TestKey {
 public:
  /// A new RSA key of `bits`.
  static TestKey Rsa(int bits = 2048) { return TestKey(EVP_RSA_gen(bits)); }
  /// A new EC key (P-256): not RS256-capable.
  static TestKey Ec() { return TestKey(EVP_EC_gen("P-256")); }

  ~TestKey() { EVP_PKEY_free(key_); }
  TestKey(TestKey&& other) noexcept : key_(other.key_) { other.key_ = nullptr; }
  TestKey(const TestKey&) = delete;
  TestKey& operator=(const TestKey&) = delete;

  EVP_PKEY* get() const { return key_; }

  /// PKCS#8 PEM; encrypted with AES-256 under `passphrase` when one is given.
  std::string PrivatePem(std::string_view passphrase = {}) const {
    BIO* bio = BIO_new(BIO_s_mem());
    const EVP_CIPHER* cipher = passphrase.empty() ? nullptr : EVP_aes_256_cbc();
    if (PEM_write_bio_PKCS8PrivateKey(bio, key_, cipher, const_cast<char*>(passphrase.data()),
                                      static_cast<int>(passphrase.size()), nullptr, nullptr) != 1) {
      std::abort();
    }
    return Drain(bio);
  }

  /// A self-signed certificate for this key (CN=ferry-test), PEM.
  std::string CertificatePem() const {
    X509* cert = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -300);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key_);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("ferry-test"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    if (X509_sign(cert, key_, EVP_sha256()) == 0) std::abort();
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, cert);
    X509_free(cert);
    return Drain(bio);
  }

  /// Whether `signature` is this key's RS256 signature of `data`.
  bool VerifiesRs256(std::string_view data, std::string_view signature) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const bool ok =
        EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key_) == 1 &&
        EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                         signature.size(), reinterpret_cast<const unsigned char*>(data.data()),
                         data.size()) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
  }

 private:
  explicit TestKey(EVP_PKEY* key) : key_(key) {
    if (key_ == nullptr) std::abort();
  }
  static std::string Drain(BIO* bio) {
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<size_t>(size));
    BIO_free(bio);
    return out;
  }

  EVP_PKEY* key_;
};

}  // namespace ferry::testing
