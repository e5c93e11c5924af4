// ferry cat DATASET [--start I] [--count N]: one JSON object per sample per line, in the value
// forms of cli/sample_json.h. A poisoned sample stops the output with an error naming it. A
// dataset in a remote store is read one shard at a time through a temporary folder.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>

#include "base/file_util.h"
#include "cli/command.h"
#include "cli/dataset_url.h"
#include "cli/sample_json.h"
#include "cli/scratch_folder.h"
#include "ferry/format/local_dataset.h"

namespace ferry::cli {
namespace {

struct CatOptions {
  std::string dataset;
  std::string split;
  uint64_t start = 0;
  std::optional<uint64_t> count;  // to the end when unset
  bool allow_unsafe = false;
};

// Fetches the files of `entry` that a reader needs from `source` into `folder`: of each file (a
// companion, the data), the compressed form when the index lists one and the store has it, else
// the raw form.
Status FetchShard(const DatasetUrl& source, size_t k, const ShardDescription& entry,
                  const std::filesystem::path& folder) {
  for (const ShardFile& file : entry.files()) {
    bool fetched = false;
    for (const FileInfo* form : {file.zip, file.raw}) {
      if (form == nullptr) continue;
      std::error_code ec;
      std::filesystem::create_directories((folder / form->basename).parent_path(), ec);
      auto got =
          source.store().GetToFile(source.prefix() + form->basename, folder / form->basename);
      if (!got && got.error().code() != StatusCode::kNotFound) return got.status();
      if (got) {
        fetched = true;
        break;
      }
    }
    if (!fetched) {
      const FileInfo& named = file.zip ? *file.zip : *file.raw;
      return NotFoundError(fmt::format("shard {}: {} not found", k, source.UrlOf(named.basename)));
    }
  }
  return Status::Ok();
}

// `status` with `scratch`'s path in its message (the local readers name the files they read)
// replaced by the dataset's URL, which is what the user named.
Status NamedForUser(const Status& status, const DatasetUrl& source,
                    const std::filesystem::path& scratch) {
  std::string message = status.message();
  const std::string path = scratch.string() + "/";
  const std::string url = source.UrlOf("");
  for (size_t at = 0; (at = message.find(path, at)) != std::string::npos; at += url.size()) {
    message.replace(at, path.size(), url);
  }
  return Status(status.code(), std::move(message));
}

// Prints samples [start, end) of `dataset`, whose shards are fetched from `source` into
// `scratch` one at a time when it is set (the dataset is remote).
Status PrintSamples(const LocalDataset& dataset, uint64_t start, uint64_t end,
                    const DatasetUrl& source, const std::optional<std::filesystem::path>& scratch) {
  SampleFields sample;
  std::optional<size_t> fetched;  // the shard in the scratch folder
  for (uint64_t i = start; i < end; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto where, dataset.Locate(i));
    if (scratch && fetched != where.first) {
      if (fetched) {
        for (const std::string& name : ShardFiles(dataset.index().shards[*fetched])) {
          std::error_code ec;
          std::filesystem::remove(*scratch / name, ec);  // an open reader keeps its mapping
        }
      }
      FERRY_RETURN_IF_ERROR(
          FetchShard(source, where.first, dataset.index().shards[where.first], *scratch));
      fetched = where.first;
    }
    FERRY_ASSIGN_OR_RETURN(auto shard, dataset.Shard(where.first));
    FERRY_RETURN_IF_ERROR(shard->ReadSample(where.second, sample));
    auto line = SampleJsonLine(*sample.config, sample.fields);
    if (!line) {
      return line.error().WithContext(
          fmt::format("sample {} ({} sample {})", i, shard->origin(), where.second));
    }
    line->push_back('\n');
    if (std::fwrite(line->data(), 1, line->size(), stdout) != line->size()) {
      return UnavailableError("cannot write to standard output");
    }
  }
  return Status::Ok();
}

Result<int> RunCat(const CatOptions& o) {
  FERRY_ASSIGN_OR_RETURN(const DatasetUrl source, DatasetUrl::Open(o.dataset, o.split));
  FERRY_ASSIGN_OR_RETURN(const std::string text, source.ReadIndexText());
  FERRY_RETURN_IF_ERROR(ParseIndexFile(text, source.UrlOf("index.json")).status());
  // A remote dataset is read from a scratch folder that holds its index and, at any time, the
  // one shard being printed (cat reads in order).
  std::unique_ptr<ScratchFolder> scratch;
  std::optional<std::filesystem::path> scratch_path;
  if (!source.local()) {
    FERRY_ASSIGN_OR_RETURN(scratch, ScratchFolder::Create("cat"));
    scratch_path = scratch->path();
    FERRY_RETURN_IF_ERROR(WriteFileAtomically(*scratch_path / "index.json", text));
  }
  auto named = [&](const Status& status) {
    return scratch_path ? NamedForUser(status, source, *scratch_path) : status;
  };
  LocalDatasetOptions options;
  options.allow_unsafe_types = o.allow_unsafe;
  options.max_open_shards = 2;  // cat reads in order
  auto dataset = LocalDataset::Open(scratch_path ? *scratch_path : *source.local(), options);
  if (!dataset) return named(dataset.error());
  const uint64_t total = (*dataset)->num_samples();
  if (o.start > total) {
    return OutOfRangeError(fmt::format("--start {} is past the end ({} samples)", o.start, total));
  }
  const uint64_t end = o.count ? o.start + std::min(*o.count, total - o.start) : total;
  if (Status s = PrintSamples(**dataset, o.start, end, source, scratch_path); !s.ok()) {
    return named(s);
  }
  return 0;
}

}  // namespace

Command AddCatCommand(CLI::App& parent) {
  auto o = std::make_shared<CatOptions>();
  CLI::App* app = parent.add_subcommand(
      "cat", "Print samples as JSON, one object per line (bytes as hex, images summarized)");
  app->add_option("dataset", o->dataset,
                  "Dataset folder (index.json, or WebDataset tars) or tar shard pattern "
                  "(train-{000000..000127}.tar): a path or a URL (s3://, az://, gs://, ...)")
      ->required();
  app->add_option("--split", o->split, "Sub-folder of the dataset to read");
  app->add_option("--start", o->start, "First sample (global index)")
      ->check(NotNegative())
      ->capture_default_str();
  app->add_option("--count", o->count, "Number of samples, 0 or more (default: to the end)")
      ->check(NotNegative());
  app->add_flag("--allow-unsafe", o->allow_unsafe,
                "Read datasets with pkl columns (printed as hex, never unpickled)");
  return {app, [o] { return RunCat(*o); }};
}

}  // namespace ferry::cli
