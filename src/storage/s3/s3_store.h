// The S3 store's factory: an ObjectStore for one bucket of S3 or of an S3-compatible service
// (MinIO, moto, Ceph, GCS's XML API). The store itself has no header; this one is for the code
// that builds stores without going through a URL: the GCS store, integration tests, the CLI.
//
// \code
//   // From the environment, as OpenUrl("s3://my-bucket/...") does:
//   FERRY_ASSIGN_OR_RETURN(S3StoreConfig config, S3StoreConfigFromEnvironment("my-bucket"));
//   config.part_size = 8 << 20;
//   FERRY_ASSIGN_OR_RETURN(auto store, MakeS3Store(std::move(config)));
// \endcode
//
// Thread-safety: the stores are safe for concurrent use; the functions are reentrant.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "ferry/storage/registry.h"
#include "storage/access_token.h"
#include "storage/env_lookup.h"
#include "storage/http/http_types.h"
#include "storage/http/transport.h"
#include "storage/retry_policy.h"
#include "storage/s3/aws_credential_chain.h"
#include "storage/s3/s3_credentials.h"
#include "storage/s3/s3_endpoint.h"

namespace ferry::internal_s3 {

/// When a single PUT or an UploadPart signs its body's SHA-256 (reading it once more to hash
/// it) instead of sending UNSIGNED-PAYLOAD.
enum class PayloadSigning {
  kAuto,  // sign over plain http (nothing else protects the body), not over https
  kAlways,
  kNever,
};

struct S3StoreConfig {
  std::string scheme = "s3";  // of ToUrl and messages: "s3", or "gs" for GCS
  std::string bucket;
  S3Endpoint endpoint;
  std::string region = "us-east-1";
  std::string service = "s3";  // the SigV4 service name
  AwsCredentials credentials;  // anonymous: requests go unsigned
  /// Asked for the credentials of every request (storage/s3/aws_credential_chain.h); null:
  /// `credentials`, which never change.
  std::shared_ptr<AwsCredentialProvider> credential_provider;
  /// OAuth bearer tokens instead of SigV4 (GCS with Google's credentials:
  /// storage/gcs/google_credentials.h); null: SigV4 as above.
  std::shared_ptr<internal_storage::AccessTokenProvider> bearer_token_provider;

  RetryPolicy retry;
  http::Timeouts timeouts = http::DefaultTimeouts();
  /// Objects of this size or more go up as multipart uploads.
  uint64_t multipart_threshold = uint64_t{64} << 20;
  /// Preferred part size (S3 needs >= 5 MiB for all parts but the last; tests go smaller).
  uint64_t part_size = uint64_t{16} << 20;
  int max_parts_in_flight = 8;
  PayloadSigning payload_signing = PayloadSigning::kAuto;
  int list_page_size = 1000;  // max-keys of each ListObjectsV2 request
  /// Ask listings for encoding-type=url (some S3-compatible servers reject it).
  bool list_url_encoding = true;
  /// Send x-amz-request-payer: requester with every request (a Requester Pays bucket: the
  /// reader pays for requests and transfer, and S3 refuses requests without it).
  bool requester_pays = false;
  /// The time requests are signed with; empty: the system clock.
  std::function<std::chrono::system_clock::time_point()> clock;
};

/// The store for `config.bucket`. With `transport` null, every request goes through
/// http::DefaultTransport() looked up afresh, so that a store created before a fork works in
/// the child. kInvalidArgument for an empty bucket or endpoint, or sizes out of range.
Result<std::shared_ptr<ObjectStore>> MakeS3Store(S3StoreConfig config,
                                                 std::shared_ptr<http::Transport> transport = {});

/// The configuration OpenUrl("s3://BUCKET/...") uses: the credential chain and region
/// (aws_credential_chain.h, s3_credentials.h),
/// endpoint and addressing (s3_endpoint.h), AWS bucket naming rules unless the endpoint is
/// custom, and requester_pays when the bucket is among the comma-separated names of
/// FERRY_S3_REQUESTER_PAYS ("*": every bucket) or of Mosaic Streaming's
/// MOSAICML_STREAMING_AWS_REQUESTER_PAYS.
Result<S3StoreConfig> S3StoreConfigFromEnvironment(std::string_view bucket,
                                                   const AwsConfigOptions& options = {},
                                                   const EnvLookup& env = ProcessEnv);

/// What the registered factory of "s3" does, with the environment given: parses the URL and
/// returns the store for its bucket, built from `env`. Stores are cached (store_cache.h) per
/// bucket and per value of every variable that shapes them, so repeated calls are cheap; edits
/// to ~/.aws files after the first call in a process are not seen (as in the AWS SDKs, which
/// read them once).
Result<StoreAndKey> OpenS3Url(std::string_view url, const EnvLookup& env = ProcessEnv);

/// The store for the configuration `make` builds, from the process-wide store cache under
/// `cache_key` (store_cache.h), which must hold every input of `make`. For the factories of
/// stores built on this one (GCS).
Result<std::shared_ptr<ObjectStore>> CachedS3Store(
    std::string_view cache_key, const std::function<Result<S3StoreConfig>()>& make);

}  // namespace ferry::internal_s3
