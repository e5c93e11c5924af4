// Where S3 requests go: "s3://bucket/key" URLs, bucket name rules, the service endpoint and its
// addressing style, and the percent-encoding that turns keys into request URLs.
//
// Addressing:
//   - AWS (no endpoint override): virtual-hosted, https://BUCKET.s3.REGION.amazonaws.com/KEY,
//     except for bucket names with dots, which would not match the TLS certificate's wildcard:
//     those use path style, https://s3.REGION.amazonaws.com/BUCKET/KEY.
//   - A custom endpoint ($AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL, else $S3_ENDPOINT_URL;
//     e.g. MinIO, moto, Ceph, GCS): path style, ENDPOINT/BUCKET/KEY, since such servers rarely
//     have wildcard DNS.
//   - $FERRY_S3_ADDRESSING=path|virtual overrides either choice.
// Keys are encoded per '/'-separated segment with http::PercentEncode (RFC 3986 unreserved
// characters kept, every other byte %XX), which is also exactly the canonical URI that SigV4
// signs.
//
// Thread-safety: values and reentrant functions (ResolveS3Endpoint reads `env`).
#pragma once

#include <string>
#include <string_view>

#include "ferry/result.h"
#include "storage/env_lookup.h"

namespace ferry::internal_s3 {

/// The parts of an absolute URL, as views into it: scheme://authority/path?query.
struct UrlParts {
  std::string_view scheme;
  std::string_view authority;  // host[:port]
  std::string_view path;       // "/..." or empty
  std::string_view query;      // without '?'
};

/// kInvalidArgument unless `url` is "scheme://authority[/path][?query]".
Result<UrlParts> SplitUrl(std::string_view url);

/// The Host header for `parts`: lowercase, without the port when it is the scheme's default.
std::string HostHeader(const UrlParts& parts);

/// s3://bucket/key, split. The key is everything after the bucket's '/', taken literally (no
/// decoding: '?', '#' and '%' are key characters); it may be empty.
struct BucketAndKey {
  std::string bucket;
  std::string key;
};
Result<BucketAndKey> ParseBucketUrl(std::string_view url, std::string_view scheme);

enum class BucketNaming {
  kAws,         // 3-63 of a-z 0-9 . -, alphanumeric at both ends, no "..", not an IP address
  kGcs,         // as kAws plus '_', and up to 222 characters when dotted
  kPermissive,  // custom endpoints (MinIO, Ceph, ...): 1-255 of A-Z a-z 0-9 . _ -
};

/// kInvalidArgument naming the bucket and the rule it breaks.
Status ValidateBucketName(std::string_view bucket, BucketNaming naming);

enum class AddressingStyle { kPath, kVirtualHosted };

struct S3Endpoint {
  std::string scheme = "https";  // "https" or "http"
  std::string authority;         // host[:port] of the service, without the bucket
  std::string base_path;         // "" or "/prefix" when the service sits under a path
  AddressingStyle style = AddressingStyle::kVirtualHosted;
  bool custom = false;  // not an amazonaws.com endpoint

  /// "https://s3.us-east-1.amazonaws.com (virtual-hosted)", for messages.
  std::string ToString() const;
};

/// http(s)://host[:port][/path] -> a path-style endpoint (custom = true).
Result<S3Endpoint> ParseEndpointUrl(std::string_view url);

/// https://s3.REGION.amazonaws.com, virtual-hosted.
S3Endpoint AwsEndpoint(std::string_view region);

/// The endpoint for `bucket`, from the environment as described above.
Result<S3Endpoint> ResolveS3Endpoint(std::string_view bucket, std::string_view region,
                                     const EnvLookup& env = ProcessEnv);

/// The URL requests about the bucket as a whole go to, without a trailing '/':
/// "https://b.s3.r.amazonaws.com" or "http://127.0.0.1:5055/b".
std::string BucketUrl(const S3Endpoint& endpoint, std::string_view bucket);

/// BucketUrl + "/" + the key encoded per segment.
std::string ObjectUrl(const S3Endpoint& endpoint, std::string_view bucket, std::string_view key);

}  // namespace ferry::internal_s3
