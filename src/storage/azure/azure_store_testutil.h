// What the Azure store's request-building tests share: a pinned clock and key, a store opened on a
// RecordingTransport, canned replies, and a check that a recorded request is correctly signed.
#pragma once

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "storage/azure/azure_auth.h"
#include "storage/azure/azure_store.h"
#include "storage/http/recording_transport.h"
#include "storage/http/url_encoding.h"
#include "storage/testing/fake_env_testutil.h"

namespace ferry::internal_azure::azure_test {

// The emulator's published account key (not a secret).
constexpr std::string_view kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
// A made-up "real" key and SAS signature: the secrets that must never leak.
constexpr std::string_view kKey =
    "c2VjcmV0LWtleS1ieXRlcy1mb3ItdGVzdHMtb25seS0wMTIzNDU2Nzg5YWJjZGVmZ2hpams=";
constexpr std::string_view kSig = "s3cr3tS1gnature%2Bvalue%3D";
constexpr std::string_view kBlobBase = "https://myaccount.blob.core.windows.net/data/";
constexpr std::string_view kDate = "Tue, 07 Jan 2025 12:34:56 GMT";

inline EnvLookup KeyEnv() {
  return testing::FakeEnv(
      {{"AZURE_STORAGE_ACCOUNT", "myaccount"}, {"AZURE_STORAGE_KEY", std::string(kKey)}});
}

inline EnvLookup SasEnv() {
  return testing::FakeEnv(
      {{"AZURE_STORAGE_ACCOUNT", "myaccount"},
       {"AZURE_STORAGE_SAS_TOKEN", "?sv=2021-08-06&sp=rwdl&sig=" + std::string(kSig)}});
}

inline AzureStoreOptions TestOptions() {
  AzureStoreOptions options;
  options.retry.initial_backoff = std::chrono::milliseconds(1);
  options.retry.max_backoff = std::chrono::milliseconds(2);
  options.retry.max_attempts = 4;
  options.now = [] { return std::chrono::system_clock::from_time_t(1736253296); };
  return options;
}

// Objects over `limit` bytes go up in blocks of `block` bytes.
inline AzureStoreOptions SmallBlocks(uint64_t limit = 10, uint64_t block = 4) {
  AzureStoreOptions options = TestOptions();
  options.single_put_limit = limit;
  options.block_size = block;
  return options;
}

struct Opened {
  std::shared_ptr<ObjectStore> store;
  std::string key;
};

inline Opened Open(std::string_view url, std::shared_ptr<http::Transport> transport,
                   AzureStoreOptions options = TestOptions(), const EnvLookup& env = KeyEnv()) {
  auto opened = OpenAzureUrl(url, env, std::move(options), std::move(transport));
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return {};
  return {opened->store, opened->key};
}

inline http::Response Ok(int status = 200, std::string body = {}) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

inline http::Response AzureError(int status, std::string_view code, std::string_view message) {
  http::Response r;
  r.status = status;
  r.headers.Set("x-ms-error-code", std::string(code));
  r.body = fmt::format(
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{}</Code><Message>{}\n"
      "RequestId:0\nTime:2025-01-07T12:34:56Z</Message></Error>",
      code, message);
  return r;
}

// Checks that a recorded request carries the version, the pinned date and a correct signature.
inline void ExpectSigned(const http::RecordedRequest& recorded) {
  SCOPED_TRACE(recorded.method + " " + recorded.url);
  EXPECT_EQ(recorded.headers.Get("x-ms-version").value_or(""), kAzureApiVersion);
  EXPECT_EQ(recorded.headers.Get("x-ms-date").value_or(""), kDate);
  http::Request request;
  request.method = recorded.method;
  request.url = recorded.url;
  request.headers = recorded.headers;
  request.headers.Remove("Authorization");
  if (recorded.method == "PUT") request.body = ByteSource::FromView(recorded.body);
  const std::string expected = fmt::format(
      "SharedKey myaccount:{}",
      SharedKeySignature(Base64Decode(kKey).value(), SharedKeyStringToSign(request, "myaccount")));
  EXPECT_EQ(recorded.headers.Get("Authorization").value_or(""), expected);
}

}  // namespace ferry::internal_azure::azure_test
