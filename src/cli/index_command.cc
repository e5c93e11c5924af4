// ferry index FOLDER: writes FOLDER/index.json for a folder (or a prefix in any store) of
// WebDataset .tar shards - the shard list as wids writes it (src/format/webdataset_index.h), with
// each shard's sample count and size - so that a StreamingDataset over the folder plans its
// epochs at a cold start without opening a shard. Each shard is read once, `--jobs` at a time
// (from a remote store, downloaded to a scratch folder and deleted once counted), and scanned by
// the code that reads it when streaming: a shard that streaming would refuse fails here, named.
// A gzipped tar (.tar.gz, .tgz) is decompressed in memory to be counted, and listed with the size
// of the tar inside, which the cache keeps.
// An index.json that is not a shard list (an MDS dataset's) is never overwritten.
#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "cli/dataset_url.h"
#include "format/webdataset_index.h"

namespace ferry::cli {
namespace {

struct IndexOptions {
  std::string folder;
  uint32_t jobs = 8;
};

Result<int> RunIndex(const IndexOptions& o) {
  FERRY_ASSIGN_OR_RETURN(const DatasetUrl folder, DatasetUrl::Open(o.folder));
  if (folder.is_pattern()) {
    return InvalidArgumentError(fmt::format(
        "{}: `ferry index` lists every tar of a folder; give the folder, not a shard pattern",
        folder.name()));
  }
  if (auto existing = folder.store().Get(folder.prefix() + "index.json")) {
    if (!internal_format::IsWebDatasetIndex(*existing)) {
      return AlreadyExistsError(
          fmt::format("{} is not a WebDataset shard list (an MDS dataset's?); not replacing it",
                      folder.UrlOf("index.json")));
    }
  } else if (existing.error().code() != StatusCode::kNotFound) {
    return existing.error();
  }
  FERRY_ASSIGN_OR_RETURN(const DatasetDescription description, folder.DescribeTars(o.jobs));
  uint64_t samples = 0;
  for (const ShardDescription& shard : description.shards) samples += shard.samples;
  FERRY_RETURN_IF_ERROR(folder.store().Put(folder.prefix() + "index.json",
                                           internal_format::SerializeWebDatasetIndex(description)));
  std::printf("indexed %zu shards, %llu samples: %s\n", description.shards.size(),
              static_cast<unsigned long long>(samples), folder.UrlOf("index.json").c_str());
  return 0;
}

}  // namespace

Command AddIndexCommand(CLI::App& parent) {
  auto o = std::make_shared<IndexOptions>();
  CLI::App* app = parent.add_subcommand(
      "index", "Write FOLDER/index.json listing the WebDataset .tar shards in FOLDER");
  app->add_option("folder", o->folder,
                  "Folder of .tar (or .tar.gz, .tgz) shards: a path or a URL (s3://, az://, "
                  "gs://, ...)")
      ->required();
  app->add_option("--jobs", o->jobs, "Shards read at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  return {app, [o]() { return RunIndex(*o); }};
}

}  // namespace ferry::cli
