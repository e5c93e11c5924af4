// Google OAuth 2.0 access tokens for Cloud Storage, whose XML API takes them as "Authorization:
// Bearer": the credentials of a gs:// store without HMAC keys (storage/gcs/gcs_store.h). The
// sources, in the order of Google's application default credentials:
//   1. $GOOGLE_APPLICATION_CREDENTIALS, a JSON file of one of these types:
//      service_account   client_email, private_key (PEM), private_key_id, token_uri: an RS256 JWT
//                        (iss client_email, aud token_uri, the scope, one hour; kid
//                        private_key_id) traded at token_uri (the jwt-bearer grant);
//      authorized_user   client_id, client_secret, refresh_token (`gcloud auth
//                        application-default login`): refreshed at token_uri (default
//                        https://oauth2.googleapis.com/token);
//      external_account  workload identity federation from a file: the text of
//                        credential_source.file (or its JSON's subject_token_field_name) traded
//                        at token_url (STS token exchange, with audience and subject_token_type);
//                        with service_account_impersonation_url, that token is traded again for
//                        the service account's (generateAccessToken). Other credential sources
//                        (URL, executable, AWS) are refused with what to use instead;
//   2. the file gcloud writes: $CLOUDSDK_CONFIG/application_default_credentials.json, else
//      ~/.config/gcloud/application_default_credentials.json;
//   3. the metadata server of GCE, GKE and Cloud Run, asked only where the environment says the
//      machine is on Google Cloud: GCE_METADATA_HOST names it, or FERRY_GCE_METADATA=true
//      (metadata.google.internal). GET /computeMetadata/v1/instance/service-accounts/default/
//      token with Metadata-Flavor: Google; 1 s to connect, 3 s a request.
// The scope is https://www.googleapis.com/auth/devstorage.read_write. Token endpoints must be
// https (plain http only to a loopback address). Files are read again at every fetch (the
// platform may rotate them). Errors name the file, the source and the endpoint, and Google's
// error code and description; never a key, a secret, an assertion or a token.
//
// Thread-safety: reentrant; a provider is safe for concurrent use.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/access_token.h"
#include "storage/credential_trace.h"
#include "storage/env_lookup.h"
#include "storage/http/transport.h"

namespace ferry::internal_gcs {

inline constexpr std::string_view kStorageScope =
    "https://www.googleapis.com/auth/devstorage.read_write";

/// One fetch with the credentials file at `path` (source 1 or 2). `now` dates the assertion and
/// the expiry. `transport` null: http::DefaultTransport().
Result<internal_storage::AccessToken> FetchGoogleFileToken(
    const std::string& path, std::chrono::system_clock::time_point now,
    http::Transport* transport = nullptr);

/// One request to the metadata server at `host` ("metadata.google.internal", "127.0.0.1:8080").
Result<internal_storage::AccessToken> FetchGoogleMetadataToken(
    const std::string& host, std::chrono::system_clock::time_point now,
    http::Transport* transport = nullptr);

/// "service account EMAIL (PATH)", "user credentials (PATH)", "workload identity federation
/// (PATH)": what the file at `path` is, for messages; an error for a file that is not one.
Result<std::string> DescribeGoogleCredentialsFile(const std::string& path);

/// The first source of the chain that is configured, as a provider; nullptr when none is.
/// `trace`, when given, gets a step for each source considered.
Result<std::shared_ptr<internal_storage::AccessTokenProvider>> LoadGoogleTokenProvider(
    const EnvLookup& env = ProcessEnv, internal_storage::WallClock clock = {},
    internal_storage::CredentialTrace* trace = nullptr);

/// The variables the chain reads (a store-cache key changes with them).
std::span<const char* const> GoogleEnvironmentVariables();

}  // namespace ferry::internal_gcs
