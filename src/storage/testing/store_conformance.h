// The conformance suite every ObjectStore passes: one parameterised test set, instantiated once
// per store (the local store in its unit test, the S3, Azure and GCS stores against real servers
// in tests/integration). What a store cannot do is declared in StoreUnderTest, not skipped.
//
// Usage, in a test file that also compiles store_conformance.cc:
//   INSTANTIATE_TEST_SUITE_P(Local, StoreConformanceTest,
//                            ::testing::Values(StoreUnderTest{...}), StoreUnderTestName);
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ferry/storage/object_store.h"
#include "ferry/storage/registry.h"

namespace ferry::testing {

struct StoreUnderTest {
  std::string name;
  /// The store, and a key prefix unique to this run ("conformance/<random>/") under which the
  /// suite may create and delete keys freely. It may set environment variables (endpoint,
  /// credentials) so that OpenUrl of the store's URLs reaches the same server.
  std::function<Result<StoreAndKey>()> open;
  /// An object of this many bytes must be uploaded in at least 3 parts by this store.
  uint64_t multipart_bytes = 0;
  /// Keys created by the listing test (must exceed the service's page size, 1000 for S3).
  size_t many_keys = 1100;
  /// Whether a Read of an object uploaded in one request reports its MD5 (ObjectInfo::checksum).
  bool gives_md5 = false;
};

/// gtest prints parameters with this (instead of their bytes).
inline void PrintTo(const StoreUnderTest& store, std::ostream* os) { *os << store.name; }

std::string StoreUnderTestName(const ::testing::TestParamInfo<StoreUnderTest>& info);

class StoreConformanceTest : public ::testing::TestWithParam<StoreUnderTest> {
 protected:
  void SetUp() override;
  void TearDown() override;

  /// prefix + name
  std::string Key(std::string_view name) const { return prefix_ + std::string(name); }

  std::shared_ptr<ObjectStore> store_;
  std::string prefix_;
};

/// Deterministic test bytes.
std::string TestBytes(size_t size, uint64_t seed);

}  // namespace ferry::testing
