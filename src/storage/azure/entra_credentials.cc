#include "storage/azure/entra_credentials.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include <array>
#include <nlohmann/json.hpp>

#include "base/ascii.h"
#include "base/file_util.h"
#include "base/hex.h"
#include "storage/base64.h"
#include "storage/http/endpoint_error.h"
#include "storage/http/url_encoding.h"
#include "storage/http/url_host.h"
#include "storage/jwt.h"

namespace ferry::internal_azure {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

constexpr std::array<const char*, 12> kVariables = {
    "AZURE_AUTHORITY_HOST",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    "AZURE_FEDERATED_TOKEN_FILE",
    "IDENTITY_ENDPOINT",
    "IDENTITY_HEADER",
    "AZURE_POD_IDENTITY_AUTHORITY_HOST",
    "FERRY_AZURE_MANAGED_IDENTITY",
    "MSI_ENDPOINT",
};

constexpr std::string_view kImdsPath = "/metadata/identity/oauth2/token";
constexpr std::string_view kImdsHost = "http://169.254.169.254";

std::string WithoutTrailingSlash(std::string text) {
  while (text.ends_with('/')) text.pop_back();
  return text;
}

bool IsTrue(std::string_view text) {
  const std::string lower = AsciiLower(text);
  return lower == "1" || lower == "true" || lower == "yes";
}

std::string NewJwtId() {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) std::abort();
  return ToHex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// The client assertion of a certificate credential (Microsoft identity platform, "certificate
// credentials"): signed with the certificate's key, valid for 10 minutes, for one use.
Result<std::string> CertificateAssertion(const ServicePrincipal& p, system_clock::time_point now) {
  const std::string source = fmt::format("AZURE_CLIENT_CERTIFICATE_PATH={}", p.certificate_path);
  auto pem = ReadFileToString(p.certificate_path);
  if (!pem) return pem.status().WithContext(source);
  if (pem->find("-----BEGIN") == std::string::npos) {
    return InvalidArgumentError(fmt::format(
        "{}: not a PEM file (a PKCS#12 .pfx must be converted: openssl pkcs12 -in FILE.pfx "
        "-out FILE.pem -nodes)",
        source));
  }
  FERRY_ASSIGN_OR_RETURN(const std::string thumbprint, CertificateThumbprint(*pem, source));
  const int64_t issued = std::chrono::duration_cast<seconds>(now.time_since_epoch()).count();
  const nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}, {"x5t", thumbprint}};
  const nlohmann::json claims = {{"aud", p.TokenUrl()}, {"iss", p.client_id}, {"sub", p.client_id},
                                 {"jti", NewJwtId()},   {"nbf", issued},      {"iat", issued},
                                 {"exp", issued + 600}};
  return internal_storage::SignJwtRs256(header, claims, *pem, source);
}

}  // namespace

std::string ServicePrincipal::TokenUrl() const {
  return fmt::format("{}/{}/oauth2/v2.0/token", authority, tenant_id);
}

std::string ServicePrincipal::Describe() const {
  if (!federated_token_file.empty()) {
    return fmt::format("workload identity {} (token file {})", client_id, federated_token_file);
  }
  if (!certificate_path.empty()) {
    return fmt::format("service principal {} (certificate {})", client_id, certificate_path);
  }
  return fmt::format("service principal {} (client secret)", client_id);
}

Result<AzureToken> FetchServicePrincipalToken(const ServicePrincipal& p,
                                              system_clock::time_point now,
                                              http::Transport* transport) {
  const std::string context =
      fmt::format("Entra ID token for {} at {}", p.Describe(), p.TokenUrl());
  constexpr std::string_view kAssertionType =
      "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
  std::string body;
  std::string hint;
  if (!p.federated_token_file.empty()) {
    auto token = ReadFileToString(p.federated_token_file);
    if (!token) {
      return token.status().WithContext(
          fmt::format("{}: the token file (AZURE_FEDERATED_TOKEN_FILE)", context));
    }
    const std::string assertion(TrimAsciiWhitespace(*token));
    if (assertion.empty()) {
      return InvalidArgumentError(
          fmt::format("{}: the token file {} is empty", context, p.federated_token_file));
    }
    body = http::FormEncode({{"grant_type", "client_credentials"},
                             {"client_id", p.client_id},
                             {"scope", kStorageScope},
                             {"client_assertion_type", kAssertionType},
                             {"client_assertion", assertion}});
    hint =
        " (check the identity's federated credential: its issuer and subject must match the "
        "token's)";
  } else if (!p.certificate_path.empty()) {
    auto assertion = CertificateAssertion(p, now);
    if (!assertion) return assertion.status().WithContext(context);
    body = http::FormEncode({{"grant_type", "client_credentials"},
                             {"client_id", p.client_id},
                             {"scope", kStorageScope},
                             {"client_assertion_type", kAssertionType},
                             {"client_assertion", *assertion}});
    hint = " (check that this certificate is uploaded to the app registration)";
  } else {
    body = http::FormEncode({{"grant_type", "client_credentials"},
                             {"client_id", p.client_id},
                             {"scope", kStorageScope},
                             {"client_secret", p.client_secret}});
    hint =
        " (check AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, and the secret's "
        "expiry)";
  }
  FERRY_ASSIGN_OR_RETURN(
      const std::string reply,
      internal_storage::PostTokenForm(p.TokenUrl(), body, context, hint, transport));
  return internal_storage::ParseAccessTokenReply(reply, now, context);
}

std::string ManagedIdentity::Describe() const {
  return fmt::format(
      "managed identity{} ({} at {})", client_id.empty() ? "" : fmt::format(" {}", client_id),
      identity_header.empty() ? "instance metadata service" : "IDENTITY_ENDPOINT", url);
}

Result<AzureToken> FetchManagedIdentityToken(const ManagedIdentity& identity,
                                             system_clock::time_point now,
                                             http::Transport* transport) {
  const std::string context = fmt::format("Entra ID token for {}", identity.Describe());
  const bool app_service = !identity.identity_header.empty();
  http::Request request;
  request.url = fmt::format("{}?api-version={}&resource={}", identity.url,
                            app_service ? "2019-08-01" : "2018-02-01",
                            http::PercentEncode(kStorageResource, /*keep_slash=*/false));
  if (!identity.client_id.empty()) {
    request.url += "&client_id=" + http::PercentEncode(identity.client_id, false);
  }
  if (app_service) {
    request.headers.Set("X-IDENTITY-HEADER", identity.identity_header);
    request.timeouts.connect_ms = 2'000;
    request.timeouts.total_ms = 10'000;
  } else {
    request.headers.Set("Metadata", "true");
    request.timeouts.connect_ms = 1'000;
    request.timeouts.total_ms = 3'000;
  }
  const auto owned = http::DefaultIfNull(transport);
  auto reply = transport->Execute(std::move(request));
  if (!reply) {
    if (app_service) return reply.status().WithContext(context);
    return reply.status().WithContext(fmt::format(
        "{}: no answer within 1 s (not on an Azure VM, or the VM has no managed identity: unset "
        "FERRY_AZURE_MANAGED_IDENTITY, or give a service principal)",
        context));
  }
  if (reply->status >= 300) {
    return internal_storage::TokenEndpointError(
        *reply, context,
        reply->status == 400 && identity.client_id.empty()
            ? " (no system-assigned identity? set AZURE_CLIENT_ID to the "
              "user-assigned identity's client id)"
            : "");
  }
  return internal_storage::ParseAccessTokenReply(reply->body, now, context);
}

Result<std::string> CertificateThumbprint(std::string_view pem, std::string_view source) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return ResourceExhaustedError("out of memory reading a certificate");
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (cert == nullptr) {
    return InvalidArgumentError(
        fmt::format("{}: holds no PEM certificate (the file needs the certificate beside its "
                    "private key)",
                    source));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  const int ok = X509_digest(cert, EVP_sha1(), digest, &size);
  X509_free(cert);
  if (ok != 1)
    return InternalError(fmt::format("{}: OpenSSL could not hash the certificate", source));
  return Base64UrlEncode(std::string_view(reinterpret_cast<const char*>(digest), size));
}

std::span<const char* const> EntraEnvironmentVariables() { return kVariables; }

Result<std::shared_ptr<AzureTokenProvider>> LoadAzureTokenProvider(
    const EnvLookup& env, internal_storage::WallClock clock,
    internal_storage::CredentialTrace* trace) {
  using internal_storage::TraceStep;
  if (!clock) clock = [] { return system_clock::now(); };
  auto get = [&](std::string_view name) { return env(name).value_or(""); };
  ServicePrincipal p;
  if (const std::string host = get("AZURE_AUTHORITY_HOST"); !host.empty()) {
    if (!http::IsPrivateEndpoint(host)) {
      return InvalidArgumentError(fmt::format(
          "AZURE_AUTHORITY_HOST={}: must be an https:// URL (plain http only to a loopback "
          "address)",
          host));
    }
    p.authority = WithoutTrailingSlash(host);
  }
  p.tenant_id = get("AZURE_TENANT_ID");
  p.client_id = get("AZURE_CLIENT_ID");
  p.client_secret = get("AZURE_CLIENT_SECRET");
  p.certificate_path = get("AZURE_CLIENT_CERTIFICATE_PATH");
  p.federated_token_file = get("AZURE_FEDERATED_TOKEN_FILE");
  const bool principal =
      !p.client_secret.empty() || !p.certificate_path.empty() || !p.federated_token_file.empty();
  if (principal) {
    if (p.tenant_id.empty() || p.client_id.empty()) {
      return InvalidArgumentError(
          fmt::format("{} is set, but AZURE_TENANT_ID and AZURE_CLIENT_ID must be set with it",
                      !p.client_secret.empty()      ? "AZURE_CLIENT_SECRET"
                      : !p.certificate_path.empty() ? "AZURE_CLIENT_CERTIFICATE_PATH"
                                                    : "AZURE_FEDERATED_TOKEN_FILE"));
    }
    // The SDKs' order: a secret, then a certificate, then a federated token.
    if (!p.client_secret.empty()) {
      p.certificate_path.clear();
      p.federated_token_file.clear();
    } else if (!p.certificate_path.empty()) {
      p.federated_token_file.clear();
      if (!get("AZURE_CLIENT_CERTIFICATE_PASSWORD").empty()) {
        return InvalidArgumentError(
            "AZURE_CLIENT_CERTIFICATE_PASSWORD is set: ferry reads only an unencrypted PEM "
            "certificate and key (convert with: openssl pkcs12 -in FILE.pfx -out FILE.pem "
            "-nodes, and keep the file readable only by the job)");
      }
      // Read once now, so that a wrong path or format fails when the URL is opened.
      auto pem = ReadFileToString(p.certificate_path);
      if (!pem) return pem.status().WithContext("AZURE_CLIENT_CERTIFICATE_PATH");
    }
    std::string source = p.Describe();
    TraceStep(trace, "service principal", fmt::format("{} (tenant {})", source, p.tenant_id));
    return std::make_shared<AzureTokenProvider>(
        std::move(source), [p, clock] { return FetchServicePrincipalToken(p, clock()); }, clock);
  }
  TraceStep(trace, "service principal",
            "AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PATH and AZURE_FEDERATED_TOKEN_FILE not "
            "set");
  ManagedIdentity identity;
  identity.client_id = p.client_id;
  if (const std::string endpoint = get("IDENTITY_ENDPOINT"); !endpoint.empty()) {
    identity.url = endpoint;
    identity.identity_header = get("IDENTITY_HEADER");
    if (identity.identity_header.empty()) {
      return InvalidArgumentError(
          "IDENTITY_ENDPOINT is set but IDENTITY_HEADER is not (both come from the platform)");
    }
  } else if (const std::string host = get("AZURE_POD_IDENTITY_AUTHORITY_HOST"); !host.empty()) {
    identity.url = WithoutTrailingSlash(host) + std::string(kImdsPath);
  } else if (IsTrue(get("FERRY_AZURE_MANAGED_IDENTITY")) ||
             (!p.client_id.empty() && p.tenant_id.empty())) {
    identity.url = std::string(kImdsHost) + std::string(kImdsPath);
  } else {
    TraceStep(trace, "managed identity",
              "not asked: no IDENTITY_ENDPOINT, AZURE_POD_IDENTITY_AUTHORITY_HOST, "
              "FERRY_AZURE_MANAGED_IDENTITY or lone AZURE_CLIENT_ID");
    return std::shared_ptr<AzureTokenProvider>();
  }
  std::string source = identity.Describe();
  TraceStep(trace, "managed identity", identity.url);
  return std::make_shared<AzureTokenProvider>(
      std::move(source), [identity, clock] { return FetchManagedIdentityToken(identity, clock()); },
      clock);
}

}  // namespace ferry::internal_azure
