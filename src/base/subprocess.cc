#include "base/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace ferry {
namespace {

struct Pipe {
  int read = -1;
  int write = -1;
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

// Closes the one it is given, whatever happens.
void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Result<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv,
                                       std::chrono::milliseconds timeout, size_t max_output) {
  if (argv.empty()) return InvalidArgumentError("no program to run");
  const std::string& program = argv[0];
  Pipe out;
  Pipe err;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return InternalError(fmt::format("{}: pipe: {}", program, std::strerror(errno)));
  out.read = fds[0];
  out.write = fds[1];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return InternalError(fmt::format("{}: pipe: {}", program, std::strerror(errno)));
  err.read = fds[0];
  err.write = fds[1];

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Its own process group, so that a timeout kills what a shell started too.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  const int spawned =
      ::posix_spawnp(&pid, program.c_str(), &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  CloseFd(out.write);
  CloseFd(err.write);
  if (spawned != 0) {
    const std::string why = fmt::format("{}: cannot run it: {}", program, std::strerror(spawned));
    return spawned == ENOENT ? NotFoundError(why) : InternalError(why);
  }

  SubprocessResult result;
  Status failure;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.read >= 0 || err.read >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      failure = DeadlineExceededError(
          fmt::format("{}: still running after {} s (killed)", program, timeout.count() / 1000.0));
      break;
    }
    pollfd polled[2] = {{out.read, POLLIN, 0}, {err.read, POLLIN, 0}};
    const int ready = ::poll(polled, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      failure = InternalError(fmt::format("{}: poll: {}", program, std::strerror(errno)));
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (polled[i].fd < 0 || polled[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(polled[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        CloseFd(i == 0 ? out.read : err.read);
        continue;
      }
      std::string& text = i == 0 ? result.out : result.err;
      if (text.size() + static_cast<size_t>(n) > max_output) {
        failure = ResourceExhaustedError(
            fmt::format("{}: printed more than {} bytes to its {}", program, max_output,
                        i == 0 ? "standard output" : "standard error"));
        break;
      }
      text.append(buffer, static_cast<size_t>(n));
    }
    if (!failure.ok()) break;
  }
  // Both streams closed: the program may still run (a daemon it left behind holds nothing of
  // ours, but the program itself might not have exited). Wait for it up to the deadline.
  int status = 0;
  for (;;) {
    if (!failure.ok()) ::kill(-pid, SIGKILL);  // the whole group
    const pid_t done = ::waitpid(pid, &status, failure.ok() ? WNOHANG : 0);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      return InternalError(fmt::format("{}: waitpid: {}", program, std::strerror(errno)));
    }
    if (done == 0 && std::chrono::steady_clock::now() >= deadline) {
      failure = DeadlineExceededError(
          fmt::format("{}: still running after {} s (killed)", program, timeout.count() / 1000.0));
      continue;
    }
    if (done == 0) ::usleep(5'000);
  }
  if (!failure.ok()) return failure;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace ferry
