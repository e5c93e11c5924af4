// The GCS store: Google Cloud Storage through its S3-compatible XML API, authenticated with
// HMAC keys (SigV4 with region "auto") or, without them, with Google OAuth tokens
// (storage/gcs/google_credentials.h: service account keys, user and workload identity
// federation files, the metadata server) sent as "Authorization: Bearer"; built on the S3 store
// (s3_store.h) rather than beside it.
//
// URLs: gs://BUCKET/KEY (gcs://BUCKET/KEY is accepted too; ToUrl always says gs://).
// Environment:
//   GCS_HMAC_ACCESS_KEY_ID, GCS_HMAC_SECRET  (or Mosaic Streaming's GCS_KEY, GCS_SECRET, read
//                                            when neither is set)
//                                            an HMAC key of a service account (Cloud Console >
//                                            Cloud Storage > Settings > Interoperability). Both
//                                            or neither; with neither, Google's credentials
//                                            where the environment has any, else requests go
//                                            unsigned, which reads public buckets.
//   GCS_ENDPOINT_URL                         instead of https://storage.googleapis.com (a proxy,
//                                            or any S3-compatible server in tests). Path style.
// STORAGE_EMULATOR_HOST is not read: the emulators it points to (fake-gcs-server) serve the
// JSON API, not the XML API this store speaks.
//
// Thread-safety: as the S3 store; the functions are reentrant.
#pragma once

#include <string_view>

#include "ferry/result.h"
#include "ferry/storage/registry.h"
#include "storage/env_lookup.h"
#include "storage/s3/s3_store.h"

namespace ferry::internal_gcs {

inline constexpr std::string_view kGcsEndpoint = "https://storage.googleapis.com";

/// The S3 store configuration for a GCS bucket, from the environment described above.
Result<internal_s3::S3StoreConfig> GcsStoreConfigFromEnvironment(std::string_view bucket,
                                                                 const EnvLookup& env = ProcessEnv);

/// What the registered factory of "gs" and "gcs" does, with the environment given; stores are
/// cached like OpenS3Url's.
Result<StoreAndKey> OpenGcsUrl(std::string_view url, const EnvLookup& env = ProcessEnv);

}  // namespace ferry::internal_gcs
