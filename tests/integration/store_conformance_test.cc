// The store conformance suite against real servers: S3 on s3rver and moto, GCS's XML API on moto,
// Azure Blob on Azurite, and Databricks volumes on the loopback Files API server. Part sizes are
// lowered so that the multipart test uploads 3 parts.
#include "storage/testing/store_conformance.h"

#include <gtest/gtest.h>

#include "storage/azure/azure_store.h"
#include "storage/databricks/databricks_store.h"
#include "storage/gcs/gcs_store.h"
#include "storage/s3/s3_store.h"
#include "tests/integration/server_env.h"

namespace ferry::testing {
namespace {

constexpr uint64_t kPart = 5 << 20;  // S3's smallest part

StoreUnderTest S3Store(const std::string& server) {
  return StoreUnderTest{
      .name = server == "S3RVER" ? "s3rver" : "moto",
      .open = [server]() -> Result<StoreAndKey> {
        UseS3Server(server);
        const std::string bucket = ServerEnv(server + "_BUCKET");
        FERRY_ASSIGN_OR_RETURN(auto config, internal_s3::S3StoreConfigFromEnvironment(bucket));
        config.multipart_threshold = kPart;
        config.part_size = kPart;
        FERRY_ASSIGN_OR_RETURN(auto store, internal_s3::MakeS3Store(std::move(config)));
        return StoreAndKey{store, "conformance/" + RunId() + "/"};
      },
      .multipart_bytes = 2 * kPart + 123456,
      .gives_md5 = true,
  };
}

StoreUnderTest GcsOnMoto() {
  return StoreUnderTest{
      .name = "gcs_xml_api_on_moto",
      .open = []() -> Result<StoreAndKey> {
        ::setenv("GCS_ENDPOINT_URL", ServerEnv("MOTO_ENDPOINT").c_str(), 1);
        ::setenv("GCS_HMAC_ACCESS_KEY_ID", ServerEnv("MOTO_ACCESS_KEY").c_str(), 1);
        ::setenv("GCS_HMAC_SECRET", ServerEnv("MOTO_SECRET_KEY").c_str(), 1);
        const std::string bucket = ServerEnv("MOTO_BUCKET");
        FERRY_ASSIGN_OR_RETURN(auto config, internal_gcs::GcsStoreConfigFromEnvironment(bucket));
        config.region = "us-east-1";  // moto checks nothing, but keep requests plausible
        config.multipart_threshold = kPart;
        config.part_size = kPart;
        FERRY_ASSIGN_OR_RETURN(auto store, internal_s3::MakeS3Store(std::move(config)));
        return StoreAndKey{store, "conformance-gcs/" + RunId() + "/"};
      },
      .multipart_bytes = 2 * kPart + 99,
      .gives_md5 = true,
  };
}

StoreUnderTest AzureOnAzurite() {
  return StoreUnderTest{
      .name = "azurite",
      .open = []() -> Result<StoreAndKey> {
        UseAzurite();
        internal_azure::AzureStoreOptions options;
        options.single_put_limit = 1 << 20;
        options.block_size = 512 << 10;
        return internal_azure::OpenAzureUrl(
            fmt::format("az://{}/conformance/{}/", ServerEnv("AZURITE_CONTAINER"), RunId()),
            ProcessEnv, options);
      },
      .multipart_bytes = 3 * (512 << 10) + 17,
      .gives_md5 = true,
  };
}

// The Files API has no multipart upload: the "large" object goes up in one PUT, streamed from the
// source, which is what the suite's large-object test checks of such a store.
StoreUnderTest DatabricksVolume() {
  return StoreUnderTest{
      .name = "databricks",
      .open = []() -> Result<StoreAndKey> {
        UseDatabricks();
        return internal_databricks::OpenDatabricksUrl(
            fmt::format("dbfs:{}/conformance/{}/", ServerEnv("DATABRICKS_VOLUME"), RunId()));
      },
      .multipart_bytes = 12 << 20,
  };
}

INSTANTIATE_TEST_SUITE_P(Servers, StoreConformanceTest,
                         ::testing::Values(S3Store("S3RVER"), S3Store("MOTO"), GcsOnMoto(),
                                           AzureOnAzurite(), DatabricksVolume()),
                         StoreUnderTestName);

}  // namespace
}  // namespace ferry::testing
