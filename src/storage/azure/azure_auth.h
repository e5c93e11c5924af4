// Authorizing Azure Blob requests: Shared Key signatures and SAS tokens.
//
// Shared Key (the "2009-09-19 and later" scheme of the Blob service,
// https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key):
//
//   StringToSign = VERB \n Content-Encoding \n Content-Language \n Content-Length \n Content-MD5 \n
//                  Content-Type \n Date \n If-Modified-Since \n If-Match \n If-None-Match \n
//                  If-Unmodified-Since \n Range \n
//                  CanonicalizedHeaders        every x-ms-* header as "name:value\n", name
//                                              lowercase, sorted, value trimmed
//                  CanonicalizedResource       "/" account + the URL's encoded path, then for each
//                                              query parameter (name lowercase, sorted; value
//                                              URL-decoded; repeated values sorted and joined
//                                              with ',') "\nname:value"
//   Authorization = "SharedKey " account ":" base64(HMAC-SHA256(base64decode(key), StringToSign))
//
// Content-Length is the body's size and is left empty when it is 0 (the rule since 2015-02-21);
// it is taken from the request body, because the transport, not the header list, sends it. The
// path is signed exactly as it is sent (percent-encoded), so with a path-style endpoint such as
// the emulator's http://127.0.0.1:10000/devstoreaccount1 the account appears twice
// ("/devstoreaccount1/devstoreaccount1/container/blob"), as the service expects.
//
// A SAS token is not a signature we compute: it is appended to every request URL as given. An
// Entra ID token (storage/azure/entra_credentials.h) goes in "Authorization: Bearer TOKEN".
//
// Thread-safety: free functions over values; reentrant.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/base64.h"
#include "storage/http/http_types.h"

namespace ferry::internal_azure {

/// The Blob service REST version every request asks for (x-ms-version).
inline constexpr std::string_view kAzureApiVersion = "2021-08-06";

/// Who a request is from. Shared Key when `account_key` is set (it wins over `sas_token`), else
/// the SAS token when set, else anonymous (public containers).
struct AzureCredentials {
  std::string account;      // the storage account: the first component of the signed resource
  std::string account_key;  // the decoded key bytes (not base64); empty: no Shared Key
  std::string sas_token;    // without a leading '?'; empty: none

  bool has_shared_key() const { return !account_key.empty(); }
  bool has_sas() const { return !sas_token.empty(); }
};

/// The Shared Key string-to-sign of `request` for `account`. `request.url` must be absolute and
/// percent-encoded; x-ms-date must already be among the headers.
std::string SharedKeyStringToSign(const http::Request& request, std::string_view account);

/// base64(HMAC-SHA256(key, string_to_sign)); `key` is the decoded account key.
std::string SharedKeySignature(std::string_view key, std::string_view string_to_sign);

/// Sets x-ms-date to `now` (unless the request already has one), then the Authorization header.
void SignSharedKey(http::Request& request, std::string_view account, std::string_view key,
                   std::chrono::system_clock::time_point now);

/// `url` with the SAS token's parameters appended ('?' or '&' as needed). A leading '?' on
/// `sas_token` is ignored; an empty token leaves the URL as it is.
std::string AppendSasToken(std::string_view url, std::string_view sas_token);

/// Authorizes `request` with `credentials`: Shared Key signature, or SAS appended, or nothing.
/// Call it last, once the URL and every header are final.
void Authorize(http::Request& request, const AzureCredentials& credentials,
               std::chrono::system_clock::time_point now);

/// Sets x-ms-date to `now` (unless the request has one) and "Authorization: Bearer TOKEN".
void AuthorizeBearer(http::Request& request, std::string_view access_token,
                     std::chrono::system_clock::time_point now);

}  // namespace ferry::internal_azure
