// InterruptWatch: Ctrl+C (SIGINT) as a stop request, so that a long command (cp, sync) can end
// its work in order and say what it did and what is left before it exits with 130.
//
// While a watch lives, the first SIGINT requests a stop on token(); a second one ends the
// process at once with exit code 130, for a user who will not wait. The signal handler only
// writes a byte to a pipe (async-signal-safe, and whichever thread the signal lands on); a
// std::jthread reads it and requests the stop. The previous handler is restored when the watch
// ends.
//
// Thread-safety: one watch at a time per process; token() and interrupted() from any thread.
#pragma once

#include <signal.h>

#include <stop_token>
#include <thread>

namespace ferry::cli {

/// The exit code of a command ended by Ctrl+C (128 + SIGINT, as shells report it).
inline constexpr int kExitInterrupted = 130;

class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  std::stop_token token() const { return stop_.get_token(); }
  bool interrupted() const { return stop_.stop_requested(); }

 private:
  std::stop_source stop_;
  int pipe_[2] = {-1, -1};
  struct sigaction previous_ {};
  bool installed_ = false;
  std::jthread watcher_;
};

}  // namespace ferry::cli
