// The index.json of a WebDataset dataset: a shard list as wids (WebDataset's indexed reader)
// writes it, and as `ferry index` writes it for a folder of tar shards:
//   {"__kind__": "wids-shard-index-v1", "wids_version": 1,
//    "shardlist": [{"url": "train-000000.tar", "nsamples": 100, "filesize": 1095680}, ...]}
// It describes a dataset of "webdataset" shards (src/format/webdataset_format.h) without opening
// one: a cold start then needs no scan. Each url is a tar beside the index (a safe relative
// path); `filesize` is required, as the cache sizes its downloads by it. A gzipped tar
// (".tar.gz", ".tgz") needs `raw_filesize` too, the size of the tar inside (ferry's key; wids
// ignores it): the cache fetches the compressed file and keeps the tar, "x.tar", which is read
// as any other. Shards elsewhere (an absolute url, a `base_path`) and a shard list without sizes
// are kInvalidArgument saying so; text that is not such a list is kDataLoss naming the origin.
//
// Thread-safety: free functions.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/format/dataset_description.h"
#include "ferry/result.h"

namespace ferry::internal_format {

inline constexpr std::string_view kWebDatasetIndexKind = "wids-shard-index-v1";

/// True when `name` is a shard of a WebDataset folder: a .tar, .tar.gz or .tgz file.
bool IsTarShardName(std::string_view name);

/// The tar inside a gzipped tar named `name` ("a.tar" for "a.tar.gz" and "a.tgz"), or nullopt
/// when `name` is not one.
std::optional<std::string> TarOfGzip(std::string_view name);

/// The description of the shard list entry `url` (a tar, or a gzipped tar with the size of the
/// tar inside, `raw_filesize`) of `filesize` bytes holding `samples` samples.
/// \pre raw_filesize is set exactly when TarOfGzip(url) is
ShardDescription DescribeWebDatasetShard(const std::string& url, uint64_t filesize,
                                         std::optional<uint64_t> raw_filesize, uint64_t samples);

/// What a shard list records of one shard besides its name and size.
struct TarShardCount {
  uint64_t samples = 0;
  uint64_t tar_bytes = 0;  // of the tar (inside a gzipped one)
};

/// Counts the samples of the tar `bytes` (a gzipped tar when `gzipped`: it is decompressed in
/// memory first) by WebDataset's rules, with the code that streams it: a shard streaming would
/// refuse is refused here, its error naming `url`.
Result<TarShardCount> CountTarSamples(std::string_view bytes, bool gzipped, std::string_view url);

/// The shard list of the tars directly in the local `folder`, sorted by name, each counted in
/// place by CountTarSamples (which reads a plain tar's member headers, not its data; a gzipped
/// one is decompressed in memory); nullopt when the folder holds no tar. What a folder of tars
/// without index.json is read as, each time it is opened: `ferry index` writes the list once.
Result<std::optional<DatasetDescription>> CountLocalTarShards(const std::filesystem::path& folder);

/// CountTarSamples of the file at `path` (memory-mapped; gunzipped first when `gzipped`).
Result<TarShardCount> CountTarFile(const std::filesystem::path& path, bool gzipped,
                                   std::string_view url);

/// True when `text` is a JSON object whose "__kind__" says it is a WebDataset shard list.
bool IsWebDatasetIndex(std::string_view text);

/// Parses a shard list; `origin` (a path or URL) prefixes every error message.
Result<DatasetDescription> ParseWebDatasetIndex(std::string_view text, std::string_view origin);

/// The shard list of `description` (of "webdataset" shards), as `ferry index` writes it.
std::string SerializeWebDatasetIndex(const DatasetDescription& description);

}  // namespace ferry::internal_format
