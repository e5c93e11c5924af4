// Base64url and RS256 JSON Web Tokens: a token signed here verifies with the public key under
// OpenSSL's own check, carries exactly the header and claims given, and a key that cannot sign
// (none, not RSA, encrypted) is an error naming where it came from - without quoting it.
#include "storage/jwt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "storage/base64.h"
#include "storage/testing/test_keys_testutil.h"

namespace ferry::internal_storage {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Base64Url, UsesTheUrlAlphabetWithoutPadding) {
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8");
  EXPECT_EQ(Base64Encode("\xfb\xff"), "+/8=");
  EXPECT_EQ(Base64UrlEncode(""), "");
  EXPECT_EQ(Base64UrlDecode("-_8").value_or("?"), "\xfb\xff");
  EXPECT_EQ(Base64UrlDecode("-_8=").value_or("?"), "\xfb\xff");
  EXPECT_EQ(Base64UrlDecode("YQ").value_or("?"), "a");
  EXPECT_FALSE(Base64UrlDecode("+/8").has_value());  // the standard alphabet is not base64url
  EXPECT_FALSE(Base64UrlDecode("Y").has_value());    // one character holds no byte
  std::string bytes;
  for (int n = 0; n < 40; ++n) {
    ASSERT_EQ(Base64UrlDecode(Base64UrlEncode(bytes)).value_or("?"), bytes) << n;
    bytes += static_cast<char>(n * 37 + 200);
  }
}

std::vector<std::string> Parts(const std::string& token) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot = token.find('.'); dot != std::string::npos; dot = token.find('.', start)) {
    parts.push_back(token.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(token.substr(start));
  return parts;
}

TEST(SignJwtRs256, SignsWhatOpenSslVerifiesWithThePublicKey) {
  const auto key = testing::TestKey::Rsa();
  const nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}, {"x5t", "abc"}};
  const nlohmann::json claims = {{"iss", "client"}, {"exp", 1900000000}, {"aud", "https://x/y"}};
  // A certificate before the key, as in a combined PEM file: skipped.
  auto token = SignJwtRs256(header, claims, key.CertificatePem() + key.PrivatePem(), "key.pem");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  const auto parts = Parts(*token);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(Base64UrlDecode(parts[0]).value()), header);
  EXPECT_EQ(nlohmann::json::parse(Base64UrlDecode(parts[1]).value()), claims);
  EXPECT_TRUE(key.VerifiesRs256(parts[0] + "." + parts[1], Base64UrlDecode(parts[2]).value()));
  // A changed claim no longer verifies: the signature covers the claims.
  const std::string forged = Base64UrlEncode(R"({"iss":"client","exp":1999999999})");
  EXPECT_FALSE(key.VerifiesRs256(parts[0] + "." + forged, Base64UrlDecode(parts[2]).value()));
  EXPECT_EQ(UnverifiedJwtClaims(*token).value(), claims);
}

TEST(SignJwtRs256, AKeyThatCannotSignIsNamedNotQuoted) {
  const auto rsa = testing::TestKey::Rsa();
  const std::string encrypted = rsa.PrivatePem("passphrase");
  const std::string ec = testing::TestKey::Ec().PrivatePem();
  struct Case {
    std::string pem;
    const char* says;
  };
  for (const Case& c :
       {Case{"", "no readable PEM private key"},
        Case{rsa.CertificatePem(), "no readable PEM private key"},
        Case{encrypted, "no readable PEM private key"}, Case{ec, "not an RSA key"}}) {
    auto token = SignJwtRs256({{"alg", "RS256"}}, {{"iss", "x"}}, c.pem, "/secrets/app.pem");
    ASSERT_FALSE(token.ok());
    EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(token.status().message(), HasSubstr("/secrets/app.pem"));
    EXPECT_THAT(token.status().message(), HasSubstr(c.says));
    EXPECT_THAT(token.status().message(), Not(HasSubstr("-----BEGIN")));
  }
}

TEST(UnverifiedJwtClaims, RefusesWhatIsNotAToken) {
  for (const char* bad : {"", "a.b", "a.b.c.d", "x.!!!.y", "x.bm90IGpzb24.y"}) {
    EXPECT_EQ(UnverifiedJwtClaims(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  const std::string token = "e30." + Base64UrlEncode(R"({"sub":"me","exp":5})") + ".c2ln";
  EXPECT_EQ(UnverifiedJwtClaims(token).value()["sub"], "me");
}

}  // namespace
}  // namespace ferry::internal_storage
