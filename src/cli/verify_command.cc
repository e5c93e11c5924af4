// ferry verify DATASET: check every shard's size and hashes, every offset and every sample, in a
// local folder or any store (remote shards are fetched a few at a time into a temporary folder).
// Exit 0 when all is well, 1 with the list of bad shards and why.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "base/file_util.h"
#include "base/human_size.h"
#include "base/python_json.h"
#include "cli/command.h"
#include "cli/dataset_url.h"
#include "cli/progress.h"
#include "cli/scratch_folder.h"
#include "cli/transfer.h"
#include "ferry/format/verify.h"
#include "format/webdataset_index.h"
#include "storage/object_key.h"

namespace ferry::cli {
namespace {

struct VerifyCommandOptions {
  std::string dataset;
  std::string split;
  bool layout_only = false;
  bool quiet = false;
  bool json = false;
};

// Shards fetched and checked at once from a remote store: a few downloads in flight, and a
// scratch folder that never holds more than these few shards.
constexpr size_t kRemoteShardsAtOnce = 4;

// VerifyDataset on a dataset in a store that is not local: its shards are fetched, a few at a
// time, into a scratch folder beside an index.json of just those shards, checked there by the
// very same code as a local dataset, and deleted. A file that is not in the store is a problem of
// its shard; a fetch that fails otherwise (a network or permission error) says nothing about the
// data and ends the run with that error.
Result<VerifyReport> VerifyRemote(const DatasetUrl& dataset, const std::string& text,
                                  const DatasetDescription& index, const VerifyOptions& options) {
  nlohmann::ordered_json json = nlohmann::ordered_json::parse(text);  // ParseIndexFile took it
  // MDS's (and Mosaic's other formats') shard list, or a WebDataset one as wids writes it.
  const std::string list = internal_format::IsWebDatasetIndex(text) ? "shardlist" : "shards";
  const nlohmann::ordered_json all_shards = std::move(json[list]);
  std::vector<std::string> files;
  for (const ShardDescription& s : index.shards) {
    for (std::string& name : ShardFiles(s)) files.push_back(std::move(name));
  }
  FERRY_ASSIGN_OR_RETURN(const std::set<std::string> present, dataset.Present(files));
  FERRY_ASSIGN_OR_RETURN(const auto scratch, ScratchFolder::Create("verify"));
  FERRY_ASSIGN_OR_RETURN(StoreAndKey local, OpenUrl(scratch->path().string()));
  local.key = FolderKey(local.key);

  VerifyReport report;
  const size_t n = index.shards.size();
  for (size_t begin = 0; begin < n; begin += kRemoteShardsAtOnce) {
    const size_t end = std::min(n, begin + kRemoteShardsAtOnce);
    std::vector<CopyItem> fetch;
    std::vector<size_t> fetched_shards;  // position in the scratch index -> shard
    json[list] = nlohmann::ordered_json::array();
    for (size_t k = begin; k < end; ++k) {
      const std::vector<std::string> names = ShardFiles(index.shards[k]);
      size_t here = 0;
      for (const std::string& name : names) {
        if (!present.contains(name)) continue;
        fetch.push_back({dataset.prefix() + name, local.key + name, 0});
        ++here;
      }
      if (here == 0) {
        ++report.shards;
        report.problems.push_back({k, names.front(), dataset.UrlOf(names.front()) + ": not found"});
        continue;
      }
      fetched_shards.push_back(k);
      json[list].push_back(all_shards[k]);
    }
    if (!fetched_shards.empty()) {
      const CopyReport copied =
          CopyAll(dataset.store(), *local.store, fetch, fetch.size(), nullptr);
      if (!copied.failures.empty()) return copied.failures.front().error;
      FERRY_RETURN_IF_ERROR(WriteFileAtomically(scratch->path() / "index.json", json.dump()));
      VerifyOptions part_options;
      part_options.decode_samples = options.decode_samples;
      FERRY_ASSIGN_OR_RETURN(const VerifyReport part, VerifyDataset(scratch->path(), part_options));
      for (ShardProblem p : part.problems) {
        p.shard = fetched_shards[p.shard];
        report.problems.push_back(std::move(p));
      }
      report.shards += part.shards;
      report.samples += part.samples;
      report.bytes_read += part.bytes_read;
      for (const CopyItem& item : fetch) {
        std::error_code ec;
        std::filesystem::remove(*local.store->LocalPath(item.dst_key), ec);
      }
    }
    if (options.progress) options.progress(end, n, report.bytes_read);
  }
  std::stable_sort(report.problems.begin(), report.problems.end(),
                   [](const ShardProblem& a, const ShardProblem& b) { return a.shard < b.shard; });
  return report;
}

Result<int> RunVerify(const VerifyCommandOptions& o) {
  FERRY_ASSIGN_OR_RETURN(const DatasetUrl dataset, DatasetUrl::Open(o.dataset, o.split));
  // Read through the store first: the same answer for a missing or non-dataset folder anywhere.
  FERRY_ASSIGN_OR_RETURN(const std::string text, dataset.ReadIndexText());
  FERRY_ASSIGN_OR_RETURN(const DatasetDescription index,
                         ParseIndexFile(text, dataset.UrlOf("index.json")));
  ProgressBar progress("verify", "shards", 0, !o.quiet && !o.json);
  VerifyOptions options;
  options.decode_samples = !o.layout_only;
  options.progress = [&](size_t done, size_t, uint64_t bytes) { progress.Update(done, bytes); };
  FERRY_ASSIGN_OR_RETURN(VerifyReport report, dataset.local()
                                                  ? VerifyDataset(*dataset.local(), options)
                                                  : VerifyRemote(dataset, text, index, options));
  progress.Finish();
  if (o.json) {
    nlohmann::ordered_json problems = nlohmann::ordered_json::array();
    for (const auto& p : report.problems) {
      problems.push_back({{"shard", p.shard}, {"file", p.file}, {"problem", p.problem}});
    }
    const nlohmann::ordered_json j = {
        {"dataset", dataset.name()},       {"ok", report.ok()},
        {"shards", report.shards},         {"samples", report.samples},
        {"bytes_read", report.bytes_read}, {"bad_shards", report.bad_shards()},
        {"problems", std::move(problems)}};
    std::printf("%s\n", DumpPythonJson(j, JsonKeyOrder::kInsertion).c_str());
    return report.ok() ? 0 : 1;
  }
  if (report.ok()) {
    std::printf("ok: %s: %zu shards, %llu samples, %s checked\n", dataset.name().c_str(),
                report.shards, static_cast<unsigned long long>(report.samples),
                FormatBytes(report.bytes_read).c_str());
    return 0;
  }
  for (const auto& p : report.problems) {
    std::printf("shard %zu %s: %s\n", p.shard, p.file.c_str(), p.problem.c_str());
  }
  const auto bad = report.bad_shards();
  std::printf("FAILED: %zu of %zu shards of %s are bad: %s\n", bad.size(), report.shards,
              dataset.name().c_str(), fmt::format("{}", fmt::join(bad, ", ")).c_str());
  return 1;
}

}  // namespace

Command AddVerifyCommand(CLI::App& parent) {
  auto o = std::make_shared<VerifyCommandOptions>();
  CLI::App* app = parent.add_subcommand(
      "verify",
      "Check every shard's size, hashes and offsets and decode every sample; exit 1 "
      "listing the bad shards");
  app->add_option("dataset", o->dataset,
                  "Dataset folder (index.json, or WebDataset tars) or tar shard pattern "
                  "(train-{000000..000127}.tar): a path or a URL (s3://, az://, gs://, ...)")
      ->required();
  app->add_option("--split", o->split, "Sub-folder of the dataset to check");
  app->add_flag("--layout-only", o->layout_only,
                "Check files, hashes and offsets but do not decode sample payloads");
  app->add_flag("-q,--quiet", o->quiet, "No progress display");
  app->add_flag("--json", o->json, "Print the outcome as one JSON object (no progress display)");
  return {app, [o] { return RunVerify(*o); }};
}

}  // namespace ferry::cli
