// ferry verify DATASET: check every shard's size and hashes, every offset and every sample.
// Exit 0 when all is well, 1 with the list of bad shards and why.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "base/human_size.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "ferry/format/verify.h"

namespace ferry::cli {
namespace {

struct VerifyCommandOptions {
  std::string dataset;
  std::string split;
  bool layout_only = false;
  bool quiet = false;
};

Result<int> RunVerify(const VerifyCommandOptions& o) {
  ProgressBar progress("verify", "shards", 0, !o.quiet);
  VerifyOptions options;
  options.split = o.split;
  options.decode_samples = !o.layout_only;
  options.progress = [&](size_t done, size_t, uint64_t bytes) { progress.Update(done, bytes); };
  FERRY_ASSIGN_OR_RETURN(VerifyReport report, VerifyDataset(o.dataset, options));
  progress.Finish();
  if (report.ok()) {
    std::printf("ok: %zu shards, %llu samples, %s checked\n", report.shards,
                static_cast<unsigned long long>(report.samples),
                FormatBytes(report.bytes_read).c_str());
    return 0;
  }
  for (const auto& p : report.problems) {
    std::printf("shard %zu %s: %s\n", p.shard, p.file.c_str(), p.problem.c_str());
  }
  const auto bad = report.bad_shards();
  std::printf("FAILED: %zu of %zu shards are bad: %s\n", bad.size(), report.shards,
              fmt::format("{}", fmt::join(bad, ", ")).c_str());
  return 1;
}

}  // namespace

Command AddVerifyCommand(CLI::App& parent) {
  auto o = std::make_shared<VerifyCommandOptions>();
  CLI::App* app = parent.add_subcommand(
      "verify",
      "Check every shard's size, hashes and offsets and decode every sample; exit 1 "
      "listing the bad shards");
  app->add_option("dataset", o->dataset, "Dataset folder (holds index.json)")->required();
  app->add_option("--split", o->split, "Sub-folder of the dataset to check");
  app->add_flag("--layout-only", o->layout_only,
                "Check files, hashes and offsets but do not decode sample payloads");
  app->add_flag("-q,--quiet", o->quiet, "No progress display");
  return {app, [o] { return RunVerify(*o); }};
}

}  // namespace ferry::cli
