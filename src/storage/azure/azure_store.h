// The Azure Blob store: factories only (the class lives in azure_store.cc, which also registers
// the az://, abfs:// and abfss:// schemes). Users reach it through OpenUrl; these factories are
// for tests, tools and callers that want their own options, environment or transport.
//
// Thread-safety: the store's methods may be called concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "ferry/storage/registry.h"
#include "storage/azure/azure_config.h"
#include "storage/http/transport.h"
#include "storage/retry_policy.h"

namespace ferry::internal_azure {

struct AzureStoreOptions {
  /// Objects up to this size go up in one Put Blob; larger ones in blocks (Put Block + Put Block
  /// List), which is also what the SDKs do above 64 MiB.
  uint64_t single_put_limit = uint64_t{64} << 20;
  /// Bytes per block; raised as needed to stay within the service's 50,000 blocks per blob.
  uint64_t block_size = uint64_t{16} << 20;
  /// Put Block requests in flight at once for one Write. Blocks stream from the source, so this
  /// bounds connections, not memory.
  int max_blocks_in_flight = 8;
  /// maxresults of each List Blobs page; 0 = the service's default (5,000).
  int list_page_size = 0;
  /// Retries of every idempotent request (all of ours are), and of each block on its own.
  RetryPolicy retry;
  /// The clock behind x-ms-date (tests pin it).
  std::function<std::chrono::system_clock::time_point()> now = [] {
    return std::chrono::system_clock::now();
  };
};

/// A store for `config`'s container. `transport` nullptr: http::DefaultTransport() at each call
/// (so a forked child gets its own).
std::shared_ptr<ObjectStore> MakeAzureStore(AzureConfig config, AzureStoreOptions options = {},
                                            std::shared_ptr<http::Transport> transport = nullptr);

/// A new store for the container of an az://, abfs:// or abfss:// URL, with the environment,
/// options and transport given explicitly.
Result<StoreAndKey> OpenAzureUrl(std::string_view url, const EnvLookup& env = ProcessEnv,
                                 AzureStoreOptions options = {},
                                 std::shared_ptr<http::Transport> transport = nullptr);

/// What the registered factory of az, abfs and abfss does, with the environment given:
/// OpenAzureUrl with default options and transport, the store cached (store_cache.h) per
/// container, endpoint, URL form and credentials.
Result<StoreAndKey> OpenCachedAzureUrl(std::string_view url, const EnvLookup& env = ProcessEnv);

}  // namespace ferry::internal_azure
