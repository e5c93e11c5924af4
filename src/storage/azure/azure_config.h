// Where Azure blobs live and who asks for them: URLs, endpoints and credentials.
//
// URLs. az, abfs and abfss share one grammar, and the key is everything after the first '/'
// following the container, taken literally (no percent-decoding; '?' and '#' are part of it):
//
//   az://<container>/<key>                         account and credentials from the environment
//   az://<container>@<account-host>/<key>          the account named in the URL
//   abfs[s]://<container>@<account-host>/<key>     the same; abfs[s]://<container>/<key> too
//
// where <account-host> is "<account>.dfs.<suffix>", "<account>.blob.<suffix>" or a bare
// "<account>" (suffix core.windows.net). Every form is served through the Blob endpoint
// https://<account>.blob.<suffix> (ADLS Gen2 accounts answer the Blob API too); abfs, like
// abfss, uses HTTPS. "az://account/container/key" is not a form: it reads as container
// "account", key "container/key", because the two cannot be told apart.
//
// Environment (read when a URL is opened; the connection string, when set, is the only source of
// account and credentials):
//   AZURE_STORAGE_CONNECTION_STRING  "AccountName=..;AccountKey=..;BlobEndpoint=..;..." with keys
//       AccountName, AccountKey, SharedAccessSignature, BlobEndpoint, DefaultEndpointsProtocol,
//       EndpointSuffix (any case; others ignored), or "UseDevelopmentStorage=true" (the emulator
//       at http://127.0.0.1:10000/devstoreaccount1 with its well-known key). A BlobEndpoint with a
//       path ("http://127.0.0.1:10000/devstoreaccount1") is path-style: the account is in the path.
//   AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN  otherwise (Mosaic
//       Streaming's AZURE_ACCOUNT_NAME and AZURE_ACCOUNT_ACCESS_KEY are read where those two are
//       not set).
//   AZURE_STORAGE_BLOB_ENDPOINT  replaces the Blob endpoint from either source (an emulator, a
//       private endpoint); the account is still AZURE_STORAGE_ACCOUNT or the connection string's.
// Credentials and an explicit endpoint from the environment apply to a URL that names an account
// only when it is the environment's account (a SAS token with no account applies to any);
// otherwise requests to that account go unauthenticated. An account key wins over a SAS token
// when both are given. Without either, a Microsoft Entra ID identity the environment configures
// (a service principal, workload identity, a managed identity: storage/azure/
// entra_credentials.h) authorizes requests to any account with bearer tokens, which go over HTTPS
// only. With no credentials at all requests are anonymous (public containers).
//
// Secrets (the account key, SAS tokens) never appear in a Status message from this file, nor in
// DebugString(); Redact() scrubs them from any text.
//
// Thread-safety: values and reentrant functions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/azure/azure_auth.h"
#include "storage/azure/entra_credentials.h"
#include "storage/env_lookup.h"

namespace ferry::internal_azure {

/// One container of one storage account, and how to reach and authorize against it.
struct AzureConfig {
  std::string account;  // may be empty only with a SAS token or anonymous access
  std::string container;
  /// The Blob service endpoint without a trailing '/': "https://acct.blob.core.windows.net", or a
  /// path-style one such as "http://127.0.0.1:10000/devstoreaccount1".
  std::string endpoint;
  AzureCredentials credentials;
  /// Entra ID bearer tokens; set only when `credentials` hold neither a key nor a SAS token.
  std::shared_ptr<AzureTokenProvider> token_provider;
  /// How ToUrl spells this container, ending in '/': "az://data/" or
  /// "abfss://data@acct.dfs.core.windows.net/".
  std::string url_prefix;

  /// endpoint/container, for container-level requests (List Blobs).
  std::string ContainerUrl() const;
  /// endpoint/container/key with each '/'-separated segment of `key` percent-encoded.
  std::string BlobUrl(std::string_view key) const;
  /// The ferry URL of `key` (url_prefix + key); ParseAzureUrl gives back this container and key.
  std::string ToUrl(std::string_view key) const;
  /// "account=acct container=data endpoint=https://... auth=SharedKey(key REDACTED)" (or
  /// "auth=Bearer(SOURCE)"): no secret.
  std::string DebugString() const;
  /// `text` with the account key (as base64), the SAS token and its signature replaced by
  /// "REDACTED", and the value of any other "sig=" query parameter masked.
  std::string Redact(std::string_view text) const;
};

/// Settings parsed from a connection string. Values are kept as written.
struct ConnectionStringSettings {
  std::string account_name;
  std::string account_key;  // base64, as the portal shows it
  std::string sas_token;
  std::string blob_endpoint;
  std::string protocol;  // DefaultEndpointsProtocol
  std::string endpoint_suffix;
};

/// Parses "Key=Value;Key=Value". kInvalidArgument (never quoting the string, which holds the key)
/// for an entry without '='.
Result<ConnectionStringSettings> ParseConnectionString(std::string_view text);

struct AzureLocation {
  AzureConfig config;
  std::string key;  // may be empty (the container's root)
};

/// Parses an az://, abfs:// or abfss:// URL and resolves its account, endpoint and credentials
/// from `env`. kInvalidArgument naming the URL and the field at fault.
Result<AzureLocation> ParseAzureUrl(std::string_view url, const EnvLookup& env = ProcessEnv);

}  // namespace ferry::internal_azure
