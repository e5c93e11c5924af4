// AWS Signature Version 4, header form (the Authorization header), as S3 and S3-compatible
// services (GCS's XML API with HMAC keys included) verify it.
//
// Signing a request, given credentials, region, service and the time:
//   1. Host (when the request has none; from the URL, default port dropped), x-amz-date
//      (YYYYMMDDTHHMMSSZ), x-amz-content-sha256 (the payload hash) and, for temporary
//      credentials, x-amz-security-token are set on the request.
//   2. CanonicalRequest = METHOD \n CanonicalUri \n CanonicalQuery \n CanonicalHeaders \n
//                         SignedHeaders \n PayloadHash
//      - CanonicalUri: the URL path, each segment URI-encoded once ('/' kept). S3 does not
//        normalize or double-encode, so a path built by ObjectUrl is already canonical; the path
//        is decoded and re-encoded so that any other spelling of the same key signs the same.
//      - CanonicalQuery: name=value pairs, both URI-encoded ('/' too), sorted by name then
//        value; '=' is always present ("?lifecycle" -> "lifecycle=").
//      - CanonicalHeaders: every header of the request except those a transport may add or
//        change (Authorization, User-Agent, Expect, Content-Length, Connection, ...): lowercase
//        name ':' value trimmed with inner runs of spaces collapsed, sorted by name, each line
//        ending in '\n'; repeated names are joined with ','. SignedHeaders: the names, ';'.
//      - PayloadHash: hex SHA-256 of the body, or UNSIGNED-PAYLOAD for a streamed body (TLS
//        protects it), or the hash of "" for a request without one (GET, HEAD, DELETE).
//   3. StringToSign = "AWS4-HMAC-SHA256" \n x-amz-date \n DATE/REGION/SERVICE/aws4_request \n
//                     hex(SHA-256(CanonicalRequest))
//   4. SigningKey = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, DATE), REGION), SERVICE), "aws4_request")
//   5. Authorization: AWS4-HMAC-SHA256 Credential=KEYID/SCOPE, SignedHeaders=...,
//      Signature=hex(HMAC(SigningKey, StringToSign))
// Reference: https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
//
// The signature, the signing key and the secret never appear in a Status message.
//
// Thread-safety: SigV4Signer is immutable after construction; Sign may run on many threads.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/http/http_types.h"
#include "storage/s3/s3_credentials.h"
#include "storage/sha256.h"

namespace ferry::internal_s3 {

/// The payload hash of a body that is not signed (streamed over TLS).
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
/// hex(SHA-256("")): the payload hash of a request without a body.
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// "20130524T000000Z".
std::string AmzDate(std::chrono::system_clock::time_point time);

std::string CanonicalUri(std::string_view url_path);
std::string CanonicalQuery(std::string_view query);

struct CanonicalHeaderList {
  std::string canonical;       // "host:example.com\nx-amz-date:...\n"
  std::string signed_headers;  // "host;x-amz-date"
};
/// Of the headers that are signed (see the file comment).
CanonicalHeaderList CanonicalizeHeaders(const http::Headers& headers);

/// Step 2, for a request whose headers are final (x-amz-* included).
Result<std::string> CanonicalRequest(const http::Request& request, std::string_view payload_hash);

/// "20130524/us-east-1/s3/aws4_request".
std::string CredentialScope(std::string_view amz_date, std::string_view region,
                            std::string_view service);

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);

/// Step 4 (raw bytes).
std::string SigningKey(std::string_view secret, std::string_view date, std::string_view region,
                       std::string_view service);

class SigV4Signer {
 public:
  SigV4Signer(AwsCredentials credentials, std::string region, std::string service = "s3");

  /// Steps 1-5 on `request` (its URL absolute and percent-encoded, its other headers final).
  /// `payload_hash` is kUnsignedPayload, kEmptyPayloadSha256 or Sha256Hex of the body. With
  /// anonymous credentials the request is left unsigned and unchanged.
  Status Sign(http::Request& request, std::string_view payload_hash,
              std::chrono::system_clock::time_point now) const;

  bool anonymous() const { return credentials_.anonymous(); }
  const AwsCredentials& credentials() const { return credentials_; }
  const std::string& region() const { return region_; }

 private:
  AwsCredentials credentials_;
  std::string region_;
  std::string service_;
};

}  // namespace ferry::internal_s3
