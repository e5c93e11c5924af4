#include "storage/gcs/gcs_store.h"

#include <fmt/format.h>

#include <string>

#include "storage/gcs/google_credentials.h"
#include "storage/http/url_host.h"
#include "storage/s3/s3_endpoint.h"

namespace ferry::internal_gcs {
namespace {

// Every environment variable GcsStoreConfigFromEnvironment reads (the store cache's key).
constexpr const char* kGcsEnvironmentVariables[] = {
    "GCS_ENDPOINT_URL", "GCS_HMAC_ACCESS_KEY_ID", "GCS_HMAC_SECRET", "GCS_KEY", "GCS_SECRET",
};

// The key of a store: its bucket and every variable its configuration reads.
std::string StoreKey(std::string_view bucket, const EnvLookup& env) {
  return "gs\n" + std::string(bucket) + EnvFingerprint(kGcsEnvironmentVariables, env) +
         EnvFingerprint(GoogleEnvironmentVariables(), env);
}

}  // namespace

Result<internal_s3::S3StoreConfig> GcsStoreConfigFromEnvironment(std::string_view bucket,
                                                                 const EnvLookup& env) {
  internal_s3::S3StoreConfig config;
  config.scheme = "gs";
  config.bucket = std::string(bucket);
  // HMAC keys sign SigV4 with any region; "auto" is the one Google documents.
  config.region = "auto";
  config.service = "s3";

  const std::string endpoint = env("GCS_ENDPOINT_URL").value_or("");
  auto parsed = internal_s3::ParseEndpointUrl(endpoint.empty() ? kGcsEndpoint : endpoint);
  if (!parsed) return parsed.status().WithContext("GCS_ENDPOINT_URL");
  config.endpoint = *std::move(parsed);
  // Path style everywhere: storage.googleapis.com/BUCKET works for every bucket name, dotted
  // ones included, with one TLS certificate.
  config.endpoint.style = internal_s3::AddressingStyle::kPath;
  config.endpoint.custom = !endpoint.empty();

  // Mosaic Streaming's names where ferry's are not set.
  const bool mosaic = !env("GCS_HMAC_ACCESS_KEY_ID") && !env("GCS_HMAC_SECRET");
  const char* key_var = mosaic ? "GCS_KEY" : "GCS_HMAC_ACCESS_KEY_ID";
  const char* secret_var = mosaic ? "GCS_SECRET" : "GCS_HMAC_SECRET";
  const std::string key_id = env(key_var).value_or("");
  const std::string secret = env(secret_var).value_or("");
  if (key_id.empty() != secret.empty()) {
    return InvalidArgumentError(key_id.empty()
                                    ? fmt::format("{} is set but {} is not", secret_var, key_var)
                                    : fmt::format("{} is set but {} is not", key_var, secret_var));
  }
  config.credentials.source = key_id.empty()
                                  ? "none found: set GCS_HMAC_ACCESS_KEY_ID and GCS_HMAC_SECRET"
                                  : fmt::format("environment ({}, {})", key_var, secret_var);
  config.credentials.access_key_id = key_id;
  config.credentials.secret_access_key = secret;
  if (key_id.empty()) {
    // No HMAC keys: Google's own credentials, where the environment has any.
    FERRY_ASSIGN_OR_RETURN(config.bearer_token_provider, LoadGoogleTokenProvider(env));
    if (config.bearer_token_provider) {
      config.credentials.source = config.bearer_token_provider->source();
      const std::string url =
          fmt::format("{}://{}", config.endpoint.scheme, config.endpoint.authority);
      if (!http::IsPrivateEndpoint(url)) {
        return InvalidArgumentError(fmt::format(
            "GCS_ENDPOINT_URL={}: Google tokens ({}) are sent only over HTTPS (or plain http to "
            "this machine)",
            url, config.bearer_token_provider->source()));
      }
    }
  }

  FERRY_RETURN_IF_ERROR(internal_s3::ValidateBucketName(
      bucket, config.endpoint.custom ? internal_s3::BucketNaming::kPermissive
                                     : internal_s3::BucketNaming::kGcs));
  return config;
}

Result<StoreAndKey> OpenGcsUrl(std::string_view url, const EnvLookup& env) {
  FERRY_ASSIGN_OR_RETURN(internal_s3::BucketAndKey location,
                         internal_s3::ParseBucketUrl(url, UrlScheme(url)));
  FERRY_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store,
                         internal_s3::CachedS3Store(StoreKey(location.bucket, env), [&] {
                           return GcsStoreConfigFromEnvironment(location.bucket, env);
                         }));
  return StoreAndKey{std::move(store), std::move(location.key)};
}

}  // namespace ferry::internal_gcs

namespace ferry {
namespace {
Result<StoreAndKey> OpenGcsUrlFromEnvironment(std::string_view url) {
  return internal_gcs::OpenGcsUrl(url);
}
const StoreRegistration kGsRegistration("gs", &OpenGcsUrlFromEnvironment);
const StoreRegistration kGcsRegistration("gcs", &OpenGcsUrlFromEnvironment);
}  // namespace
}  // namespace ferry
