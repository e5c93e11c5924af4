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

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/dataset_url.h"
#include "cli/scratch_folder.h"
#include "format/compression.h"
#include "format/webdataset_index.h"
#include "format/webdataset_samples.h"

namespace ferry::cli {
namespace {

struct IndexOptions {
  std::string folder;
  uint32_t jobs = 8;
};

struct Counted {
  uint64_t samples = 0;
  uint64_t tar_bytes = 0;  // of the tar (inside a gzipped one)
};

// The samples of the tar at `path` (gunzipped first when `gzipped`), by WebDataset's rules;
// errors name `url`.
Result<Counted> CountSamples(const std::filesystem::path& path, const std::string& url,
                             bool gzipped) {
  FERRY_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  std::string tar;
  if (gzipped) {
    FERRY_ASSIGN_OR_RETURN(const Compression gz, Compression::Parse("gz"));
    auto inflated = gz.Decompress(file.data(), uint64_t{1} << 40);
    if (!inflated) return inflated.error().WithContext(url);
    tar = std::move(*inflated);
  }
  const std::string_view bytes = gzipped ? std::string_view(tar) : file.data();
  FERRY_ASSIGN_OR_RETURN(const std::vector<internal_format::WebDatasetSample> samples,
                         internal_format::ReadWebDatasetSamples(bytes, url));
  return Counted{.samples = samples.size(), .tar_bytes = bytes.size()};
}

Result<int> RunIndex(const IndexOptions& o) {
  FERRY_ASSIGN_OR_RETURN(const DatasetUrl folder, DatasetUrl::Open(o.folder));
  FERRY_ASSIGN_OR_RETURN(const ListResult listing,
                         folder.store().List(folder.prefix(), /*recursive=*/false));
  std::vector<ObjectInfo> shards;
  for (const ObjectInfo& object : listing.objects) {
    const std::string name = object.key.substr(folder.prefix().size());
    if (name.ends_with(".tar") || internal_format::TarOfGzip(name)) shards.push_back(object);
  }
  if (shards.empty()) {
    return NotFoundError(fmt::format("{} holds no .tar (or .tar.gz) shards", folder.name()));
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

  std::unique_ptr<ScratchFolder> scratch;
  if (!folder.local()) {
    FERRY_ASSIGN_OR_RETURN(scratch, ScratchFolder::Create("index"));
  }
  std::vector<Result<Counted>> counts(shards.size(), InternalError("not counted"));
  std::atomic<size_t> next{0};
  auto count = [&](std::stop_token stop) {
    for (size_t k = next++; k < shards.size() && !stop.stop_requested(); k = next++) {
      const std::string name = shards[k].key.substr(folder.prefix().size());
      const std::string url = folder.UrlOf(name);
      const bool gzipped = internal_format::TarOfGzip(name).has_value();
      if (folder.local()) {
        counts[k] = CountSamples(*folder.local() / name, url, gzipped);
        continue;
      }
      const auto path = scratch->path() / fmt::format("{}.tar", k);
      auto got = folder.store().GetToFile(shards[k].key, path, stop);
      counts[k] = got ? CountSamples(path, url, gzipped) : Result<Counted>(got.error());
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  };
  {
    std::vector<std::jthread> workers;
    const size_t n = std::min<size_t>(std::max<uint32_t>(o.jobs, 1), shards.size());
    for (size_t i = 0; i < n; ++i) workers.emplace_back(count);
    for (std::jthread& w : workers) w.join();  // not stopped: a jthread's destructor would
  }

  DatasetDescription description;
  uint64_t samples = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    FERRY_RETURN_IF_ERROR(counts[k].status());
    samples += counts[k]->samples;
    const std::string name = shards[k].key.substr(folder.prefix().size());
    std::optional<uint64_t> raw_filesize;
    if (internal_format::TarOfGzip(name)) raw_filesize = counts[k]->tar_bytes;
    description.shards.push_back(internal_format::DescribeWebDatasetShard(
        name, shards[k].size, raw_filesize, counts[k]->samples));
  }
  FERRY_RETURN_IF_ERROR(folder.store().Put(folder.prefix() + "index.json",
                                           internal_format::SerializeWebDatasetIndex(description)));
  std::printf("indexed %zu shards, %llu samples: %s\n", shards.size(),
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
