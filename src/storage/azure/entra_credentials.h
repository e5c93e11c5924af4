// Microsoft Entra ID (Azure AD) bearer tokens for Azure Storage: the identities Azure clusters
// run as, for accounts reached without a Shared Key or SAS (storage/azure/azure_config.h). The
// sources, in the order of the Azure SDKs' DefaultAzureCredential:
//   1. a service principal with a client secret: AZURE_TENANT_ID + AZURE_CLIENT_ID +
//      AZURE_CLIENT_SECRET, traded at the token endpoint (client credentials grant);
//   2. a service principal with a certificate: AZURE_TENANT_ID + AZURE_CLIENT_ID +
//      AZURE_CLIENT_CERTIFICATE_PATH, a PEM file holding the private key and the certificate.
//      The client proves itself with a JWT assertion (RS256; the certificate's SHA-1 thumbprint
//      as x5t) signed at every fetch. A PKCS#12 file or an encrypted key is refused with the
//      command that converts it;
//   3. workload identity (AKS, federation from another cloud): AZURE_TENANT_ID +
//      AZURE_CLIENT_ID + AZURE_FEDERATED_TOKEN_FILE, the file's token (read at every fetch: the
//      platform rotates it) sent as the assertion;
//   4. managed identity, where the platform says it has one:
//      - App Service, Container Apps, Functions: IDENTITY_ENDPOINT + IDENTITY_HEADER
//        (api-version 2019-08-01, the header sent as X-IDENTITY-HEADER);
//      - the instance metadata service (VMs, scale sets, AKS nodes) at
//        http://169.254.169.254/metadata/identity/oauth2/token (api-version 2018-02-01, header
//        Metadata: true), or at $AZURE_POD_IDENTITY_AUTHORITY_HOST. It is asked only when
//        that variable is set, when FERRY_AZURE_MANAGED_IDENTITY=true, or when AZURE_CLIENT_ID
//        is set alone (a user-assigned identity): a machine that is not on Azure must not wait
//        on an address that never answers. 1 s to connect, 3 s a request.
//      AZURE_CLIENT_ID, when set, picks a user-assigned identity (client_id=).
// The token endpoint is $AZURE_AUTHORITY_HOST (default https://login.microsoftonline.com) +
// "/TENANT/oauth2/v2.0/token", scope https://storage.azure.com/.default. Tokens are renewed
// before they expire (storage/refreshing_credentials.h); their life is the reply's expires_in
// (else expires_on).
//
// Errors name the source, the client id and the endpoint, and Entra's error code and the first
// line of its description; never a secret, a key, an assertion or a token.
//
// Thread-safety: reentrant; a provider is safe for concurrent use.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/access_token.h"
#include "storage/credential_trace.h"
#include "storage/env_lookup.h"
#include "storage/http/transport.h"
#include "storage/refreshing_credentials.h"

namespace ferry::internal_azure {

/// An OAuth access token for Azure Storage.
using AzureToken = internal_storage::AccessToken;
using AzureTokenProvider = internal_storage::AccessTokenProvider;

/// The scope a service principal asks for, and the resource a managed identity names.
inline constexpr std::string_view kStorageScope = "https://storage.azure.com/.default";
inline constexpr std::string_view kStorageResource = "https://storage.azure.com/";

/// Sources 1-3: an application registered in a tenant.
struct ServicePrincipal {
  std::string authority = "https://login.microsoftonline.com";  // no trailing '/'
  std::string tenant_id;
  std::string client_id;
  // Exactly one of the three.
  std::string client_secret;
  std::string certificate_path;
  std::string federated_token_file;

  /// authority/tenant/oauth2/v2.0/token
  std::string TokenUrl() const;
  /// "service principal CLIENT (client secret)", "... (certificate PATH)", "workload identity
  /// CLIENT (token file PATH)".
  std::string Describe() const;
};

/// One client-credentials exchange at the token endpoint. `now` dates the assertion and the
/// expiry. `transport` null: http::DefaultTransport().
Result<AzureToken> FetchServicePrincipalToken(const ServicePrincipal& principal,
                                              std::chrono::system_clock::time_point now,
                                              http::Transport* transport = nullptr);

/// Source 4.
struct ManagedIdentity {
  std::string url;              // the token URL, without query
  std::string identity_header;  // App Service's IDENTITY_HEADER; empty: the metadata service
  std::string client_id;        // a user-assigned identity; empty: the system-assigned one

  std::string Describe() const;
};

/// One request for a token. `transport` null: http::DefaultTransport().
Result<AzureToken> FetchManagedIdentityToken(const ManagedIdentity& identity,
                                             std::chrono::system_clock::time_point now,
                                             http::Transport* transport = nullptr);

/// The certificate's SHA-1 thumbprint, base64url: the x5t of an assertion. `source` names the
/// file in errors.
Result<std::string> CertificateThumbprint(std::string_view pem, std::string_view source);

/// The first source of the chain that is configured, as a provider; nullptr when none is.
/// Configuration errors (a half-set service principal, a missing file) come now; a refusal by
/// the endpoint comes from the provider's Current(), naming the source. `trace`, when given, gets
/// a step for each source considered.
Result<std::shared_ptr<AzureTokenProvider>> LoadAzureTokenProvider(
    const EnvLookup& env = ProcessEnv, internal_storage::WallClock clock = {},
    internal_storage::CredentialTrace* trace = nullptr);

/// The variables the chain reads (a store-cache key changes with them).
std::span<const char* const> EntraEnvironmentVariables();

}  // namespace ferry::internal_azure
