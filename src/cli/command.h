// The `ferry` command's subcommands. Each lives in its own file and adds itself to the CLI11
// app with its options; main() runs the one that was parsed and turns its Status into a
// message and an exit code (the CLI is one of the two places where errors leave the library).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "ferry/result.h"

namespace ferry::cli {

struct Command {
  CLI::App* app = nullptr;
  /// Runs after parsing: the exit code when the command did its job (verify returns 1 when it
  /// found problems), or the error that stopped it.
  std::function<Result<int>()> run;
};

Command AddConvertCommand(CLI::App& parent);
Command AddInspectCommand(CLI::App& parent);
Command AddVerifyCommand(CLI::App& parent);
Command AddCatCommand(CLI::App& parent);
Command AddMergeIndexCommand(CLI::App& parent);
Command AddIndexCommand(CLI::App& parent);
Command AddLsCommand(CLI::App& parent);
Command AddStatCommand(CLI::App& parent);
Command AddCpCommand(CLI::App& parent);
Command AddSyncCommand(CLI::App& parent);
Command AddStreamCommand(CLI::App& parent);
Command AddDoctorCommand(CLI::App& parent);
Command AddTopCommand(CLI::App& parent);
Command AddCacheCommand(CLI::App& parent);
Command AddServeCacheCommand(CLI::App& parent);

/// A CLI11 check for counts and indexes: an integer, 0 or more. Without it "-3" wraps around in
/// an unsigned option and reads as "all" where a negative value means that.
inline CLI::Validator NotNegative() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        int64_t n = 0;
        if (!CLI::detail::lexical_cast(value, n)) return "not an integer: " + value;
        return n < 0 ? "must be 0 or more, not " + value : "";
      },
      "INT>=0", "NotNegative");
}

/// Exit codes, one per family of failure (documented in `ferry --help` and docs/cli.md):
/// 0 ok, 1 verification found problems / other failure, 2 bad arguments, 3 not found,
/// 4 already exists, 5 permission or authentication, 6 corrupt data, 7 transient (retry); and
/// 130 for a copy stopped by Ctrl+C (cli/interrupt.h), which a command returns itself.
int ExitCodeFor(const Status& status);

/// Runs the CLI; returns the process exit code.
int Main(int argc, char** argv);

}  // namespace ferry::cli
