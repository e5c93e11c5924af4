#include <fmt/format.h>

#include <cstdio>
#include <vector>

#include "cli/command.h"
#include "ferry/version.h"

namespace ferry::cli {
namespace {

// The one status -> exit code table of the CLI.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kOutOfRange:
      return kExitUsage;
    case StatusCode::kNotFound:
      return 3;
    case StatusCode::kAlreadyExists:
      return 4;
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated:
      return 5;
    case StatusCode::kDataLoss:
      return 6;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kResourceExhausted:
    case StatusCode::kAborted:
      return 7;
    default:
      return kExitFailure;
  }
}

int Main(int argc, char** argv) {
  CLI::App app{
      "ferry: MDS datasets (and WebDataset tars) made fast to build, check and stream.\n\n"
      "Exit codes: 0 ok, 1 problems found or other failure, 2 bad arguments, 3 not found,\n"
      "4 already exists, 5 permission denied, 6 corrupt data, 7 transient failure (retry),\n"
      "130 cp/sync stopped by Ctrl+C.\n\n"
      "Locations are local paths or URLs (s3://, az://, abfs[s]://, gs://, http(s)://,\n"
      "file://, and Databricks volumes as dbfs:/Volumes/...). Text that starts with 'scheme:' is\n"
      "a URL and must go on with '//' and a known scheme (s3:/x is an error, not a folder named\n"
      "s3:); write ./a:b for such a local name.",
      "ferry"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("ferry {}", Version()));
  std::vector<Command> commands = {
      AddConvertCommand(app), AddInspectCommand(app),    AddVerifyCommand(app),
      AddCatCommand(app),     AddMergeIndexCommand(app), AddLsCommand(app),
      AddStatCommand(app),    AddCpCommand(app),         AddSyncCommand(app),
      AddStreamCommand(app),  AddDoctorCommand(app),     AddIndexCommand(app),
      AddTopCommand(app),     AddCacheCommand(app),      AddServeCacheCommand(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    const Result<int> result = command.run();
    if (result.has_value()) return *result;
    const Status& status = result.error();
    std::fflush(stdout);
    std::fprintf(stderr, "ferry %s: error: %s\n", command.app->get_name().c_str(),
                 status.message().c_str());
    return ExitCodeFor(status);
  }
  return kExitUsage;
}

}  // namespace ferry::cli

int main(int argc, char** argv) { return ferry::cli::Main(argc, argv); }
