// ferry cat DATASET [--start I] [--count N]: one JSON object per sample per line, in the value
// forms of cli/sample_json.h. A poisoned sample stops the output with an error naming it.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/sample_json.h"
#include "ferry/format/local_dataset.h"

namespace ferry::cli {
namespace {

struct CatOptions {
  std::string dataset;
  std::string split;
  uint64_t start = 0;
  int64_t count = -1;
  bool allow_unsafe = false;
};

Result<int> RunCat(const CatOptions& o) {
  LocalDatasetOptions options;
  options.split = o.split;
  options.allow_unsafe_types = o.allow_unsafe;
  options.max_open_shards = 2;  // cat reads in order
  FERRY_ASSIGN_OR_RETURN(auto dataset, LocalDataset::Open(o.dataset, options));
  const uint64_t total = dataset->num_samples();
  if (o.start > total) {
    return OutOfRangeError(fmt::format("--start {} is past the end ({} samples)", o.start, total));
  }
  const uint64_t end =
      o.count < 0 ? total : std::min<uint64_t>(total, o.start + static_cast<uint64_t>(o.count));
  std::vector<std::string_view> fields;
  for (uint64_t i = o.start; i < end; ++i) {
    FERRY_ASSIGN_OR_RETURN(auto where, dataset->Locate(i));
    FERRY_ASSIGN_OR_RETURN(auto shard, dataset->Shard(where.first));
    fields.resize(shard->num_columns());
    FERRY_RETURN_IF_ERROR(shard->ReadFields(where.second, fields));
    auto line = SampleJsonLine(shard->config(), fields);
    if (!line) {
      return line.error().WithContext(
          fmt::format("sample {} ({} sample {})", i, shard->origin(), where.second));
    }
    line->push_back('\n');
    if (std::fwrite(line->data(), 1, line->size(), stdout) != line->size()) {
      return UnavailableError("cannot write to standard output");
    }
  }
  return 0;
}

}  // namespace

Command AddCatCommand(CLI::App& parent) {
  auto o = std::make_shared<CatOptions>();
  CLI::App* app = parent.add_subcommand(
      "cat", "Print samples as JSON, one object per line (bytes as hex, images summarized)");
  app->add_option("dataset", o->dataset, "Dataset folder (holds index.json)")->required();
  app->add_option("--split", o->split, "Sub-folder of the dataset to read");
  app->add_option("--start", o->start, "First sample (global index)")->capture_default_str();
  app->add_option("--count", o->count, "Number of samples (default: to the end)");
  app->add_flag("--allow-unsafe", o->allow_unsafe,
                "Read datasets with pkl columns (printed as hex, never unpickled)");
  return {app, [o] { return RunCat(*o); }};
}

}  // namespace ferry::cli
