// The Databricks volume store: dbfs:/Volumes/<catalog>/<schema>/<volume>/... as an ObjectStore,
// one store per Unity Catalog volume, spoken through the Files API 2.0
// (databricks_files_api.h) with the workspace and token of databricks_config.h. The class lives
// in databricks_store.cc, which also registers the dbfs scheme (written "dbfs:/Volumes/...").
//
//   Head    HEAD the file                     Content-Length and Last-Modified; no etag, so the
//                                             version of a file is its modification time
//   Read    GET with Range                    through http::ResumableGet: a break resumes
//                                             pinned with If-Unmodified-Since
//   Write   PUT ?overwrite=true               one request (the Files API has no multipart
//                                             upload); larger than 5 GiB is refused
//   List    GET the folders, page by page     a string prefix, as S3 has it: the folder the
//                                             prefix ends in is listed and filtered, and with
//                                             recursive = true every folder below it, 16 at once
//   Remove  DELETE the file                   a missing file is not an error; the folders it
//                                             leaves empty stay (listed as prefixes), as on a
//                                             file system
// Each request carries "Authorization: Bearer" with the provider's current token, taken per
// attempt. A 401 with an OAuth token expires exactly that token and is transient, so the retry
// goes with a new one; with a personal access token a 401 is final and says what to check.
// Errors name the file by its dbfs:/ URL.
//
// Thread-safety: all methods may run concurrently; the store holds only immutable state.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "ferry/storage/registry.h"
#include "storage/databricks/databricks_config.h"
#include "storage/env_lookup.h"
#include "storage/http/transport.h"
#include "storage/retry_policy.h"

namespace ferry::internal_databricks {

struct DatabricksStoreOptions {
  /// page_size of each directory listing request; 0 = the service's default (1,000).
  int list_page_size = 0;
  /// Folders listed at once by a recursive List (each folder is a request of its own).
  int list_concurrency = 16;
  RetryPolicy retry;
};

/// A store for `volume` ("/Volumes/c/s/v") of `config`'s workspace. `transport` nullptr:
/// http::DefaultTransport() at each call (so a forked child gets its own).
std::shared_ptr<ObjectStore> MakeDatabricksStore(
    DatabricksConfig config, std::string volume, DatabricksStoreOptions options = {},
    std::shared_ptr<http::Transport> transport = nullptr);

/// A new Files API store for a dbfs:/Volumes URL (never the FUSE folder), with the environment,
/// options and transport given explicitly.
Result<StoreAndKey> OpenDatabricksUrl(std::string_view url, const EnvLookup& env = ProcessEnv,
                                      DatabricksStoreOptions options = {},
                                      std::shared_ptr<http::Transport> transport = nullptr);

/// What the registered factory of dbfs does: the volume's FUSE folder as local files when it
/// exists (databricks_config.h), else the Files API store, cached (store_cache.h) per volume and
/// settings.
Result<StoreAndKey> OpenCachedDatabricksUrl(std::string_view url,
                                            const EnvLookup& env = ProcessEnv);

}  // namespace ferry::internal_databricks
