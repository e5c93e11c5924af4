// Running a helper program and reading what it prints: AWS's credential_process, which hands
// credentials to a job through its standard output.
//
// Thread-safety: reentrant (posix_spawn; no fork of a threaded process).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ferry/result.h"

namespace ferry {

struct SubprocessResult {
  int exit_code = 0;  // 128 + N when killed by signal N
  std::string out;    // standard output, at most `max_output` bytes
  std::string err;    // standard error, at most `max_output` bytes
};

/// Runs `argv` (argv[0] looked up on PATH) with the process's environment and no standard
/// input, and waits for it. kDeadlineExceeded, after killing it, when it runs past `timeout`;
/// kResourceExhausted when it prints more than `max_output` bytes to either stream; kNotFound
/// or kInternal when it cannot be started. A non-zero exit is not an error: it is in the result.
Result<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                       std::chrono::milliseconds timeout,
                                       size_t max_output = 1 << 20);

}  // namespace ferry
