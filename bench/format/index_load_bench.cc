// ferry-index-load-bench: what opening a dataset's index costs one process, by its size.
//
//   ferry-index-load-bench generate DIR --shards 100000 --samples 100 [--parts 1]
//       writes DIR/index.json as Mosaic's writer would for that many shards (two columns, an
//       xxh64 digest per shard), and no shard files: opening an index reads no shard. With
//       --parts P, as Mosaic's merge_index writes it for P sub-datasets ("part_00000/shard...",
//       each written by a run of its own with its own size_limit).
//   ferry-index-load-bench json DIR
//       parses DIR/index.json, as every process did before the binary form (and as Mosaic's
//       StreamingDataset does in each process).
//   ferry-index-load-bench open URL CACHE
//       opens the dataset at URL in the cache folder CACHE as a rank does (LoadIndex): the first
//       process on a node fetches and parses the JSON and writes its binary form, the others
//       revalidate it with a HEAD and decode the binary form.
//
// Each run is one process and prints one JSON line: seconds, the resident memory it added
// (rss_added_mb, what stays), its peak over the start (peak_added_mb), shards and samples.
#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "base/file_util.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/format/index.h"
#include "ferry/storage/registry.h"

namespace ferry {
namespace {

// Resident memory now, and at its peak, in KiB.
long ResidentKib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0;
  long resident = 0;
  statm >> pages >> resident;
  return resident * 4;
}
long PeakKib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

Status Generate(const std::string& dir, uint64_t shards, uint64_t samples, uint64_t parts) {
  FERRY_ASSIGN_OR_RETURN(ColumnEncoding bytes, ColumnEncoding::Parse("bytes"));
  FERRY_ASSIGN_OR_RETURN(ColumnEncoding integer, ColumnEncoding::Parse("int"));
  DatasetDescription description;
  description.shards.reserve(shards);
  std::shared_ptr<const ShardConfig> config;
  uint64_t part = parts;  // none yet
  uint64_t first_of_part = 0;
  for (uint64_t i = 0; i < shards; ++i) {
    if (const uint64_t p = i * parts / shards; p != part) {
      part = p;
      first_of_part = i;
      auto run = std::make_shared<ShardConfig>();
      run->column_names = {"image", "label"};
      run->column_encodings = {bytes, integer};
      run->column_sizes = {std::nullopt, 8};
      run->hashes = {"xxh64"};
      run->size_limit = (uint64_t{1} << 26) + part;
      config = std::move(run);
    }
    ShardDescription shard;
    shard.config = config;
    shard.samples = samples;
    const std::string name = RawShardBasename(i - first_of_part);
    shard.raw_data = {.basename = parts > 1 ? fmt::format("part_{:05d}/{}", part, name) : name,
                      .bytes = (uint64_t{1} << 26) - 4096 + i % 4096,
                      .hashes = {{"xxh64", fmt::format("{:016x}", i * 0x9E3779B97F4A7C15u)}}};
    description.shards.push_back(std::move(shard));
  }
  std::filesystem::create_directories(dir);
  return WriteFileAtomically(std::filesystem::path(dir) / "index.json",
                             SerializeIndex(description));
}

int Report(std::string_view mode, const Result<DatasetDescription>& loaded, double seconds,
           long rss_start, long peak_start) {
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "{\"mode\": \"%s\", \"seconds\": %.4f, \"rss_added_mb\": %.1f, \"peak_added_mb\": %.1f, "
      "\"shards\": %zu, \"samples\": %llu}\n",
      std::string(mode).c_str(), seconds, static_cast<double>(ResidentKib() - rss_start) / 1024,
      static_cast<double>(PeakKib() - peak_start) / 1024, loaded->shards.size(),
      static_cast<unsigned long long>(loaded->num_samples()));
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"What opening a dataset's index costs one process."};
  app.require_subcommand(1);
  std::string dir;
  std::string url;
  std::string cache;
  uint64_t shards = 100'000;
  uint64_t samples = 100;
  uint64_t parts = 1;
  auto* generate = app.add_subcommand("generate", "write DIR/index.json");
  generate->add_option("DIR", dir)->required();
  generate->add_option("--shards", shards);
  generate->add_option("--samples", samples, "samples per shard");
  generate->add_option("--parts", parts, "sub-datasets merged into one index")
      ->check(CLI::PositiveNumber);
  auto* json = app.add_subcommand("json", "parse DIR/index.json");
  json->add_option("DIR", dir)->required();
  auto* open = app.add_subcommand("open", "open URL's index in the cache folder CACHE");
  open->add_option("URL", url)->required();
  open->add_option("CACHE", cache)->required();
  CLI11_PARSE(app, argc, argv);

  if (generate->parsed()) {
    if (Status s = Generate(dir, shards, samples, parts); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    return 0;
  }
  // What the process holds before: the store and the parser are linked in either way.
  Result<StoreAndKey> store = open->parsed() ? OpenUrl(url) : Result<StoreAndKey>(StoreAndKey{});
  if (!store) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  const long rss_start = ResidentKib();
  const long peak_start = PeakKib();
  const auto start = std::chrono::steady_clock::now();
  Result<DatasetDescription> loaded = DatasetDescription{};
  if (json->parsed()) {
    auto text = ReadFileToString(std::filesystem::path(dir) / "index.json");
    loaded = text ? ParseIndexFile(*text, dir) : Result<DatasetDescription>(text.status());
  } else {
    loaded = LoadIndex(store->store.get(), store->key, cache);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Report(json->parsed() ? "json" : "open", loaded, seconds, rss_start, peak_start);
}

}  // namespace
}  // namespace ferry

int main(int argc, char** argv) { return ferry::Main(argc, argv); }
