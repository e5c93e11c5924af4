#include "cli/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace ferry::cli {
namespace {

// What the handler may touch: plain values, set before it is installed.
std::atomic<int> g_pipe_write{-1};
std::atomic<int> g_signals{0};

void OnInterrupt(int) {
  if (g_signals.fetch_add(1) > 0) ::_exit(kExitInterrupted);  // the second Ctrl+C: now
  const int saved = errno;
  const int fd = g_pipe_write.load();
  if (fd >= 0) {
    const char byte = 'i';
    [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);
  }
  errno = saved;
}

}  // namespace

InterruptWatch::InterruptWatch() {
  // Without a pipe there is no watch: Ctrl+C then ends the process as it would anyway.
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return;
  g_signals = 0;
  g_pipe_write = pipe_[1];
  struct sigaction action {};
  action.sa_handler = &OnInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  installed_ = ::sigaction(SIGINT, &action, &previous_) == 0;
  watcher_ = std::jthread([this](std::stop_token stop) {
    pollfd fd{pipe_[0], POLLIN, 0};
    while (!stop.stop_requested()) {
      if (::poll(&fd, 1, -1) <= 0) continue;  // EINTR: look again
      if (stop.stop_requested()) return;      // woken by the destructor
      stop_.request_stop();
      return;
    }
  });
}

InterruptWatch::~InterruptWatch() {
  if (pipe_[0] < 0) return;
  if (watcher_.joinable()) {
    watcher_.request_stop();
    const char wake = 'w';
    [[maybe_unused]] ssize_t n = ::write(pipe_[1], &wake, 1);
    watcher_.join();
  }
  if (installed_) ::sigaction(SIGINT, &previous_, nullptr);
  g_pipe_write = -1;
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

}  // namespace ferry::cli
