#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace ferry {
namespace {

std::chrono::steady_clock::duration LogInterval() {
  const char* text = std::getenv("FERRY_PROGRESS_INTERVAL");
  const double seconds = text != nullptr ? std::atof(text) : 0;
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds > 0 ? seconds : 10.0));
}

std::string FormatDuration(double seconds) {
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

ProgressBar::ProgressBar(std::string label, std::string unit, uint64_t total_items, bool enabled)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total_items),
      enabled_(enabled),
      terminal_(StderrIsTerminal()),
      interval_(terminal_ ? std::chrono::milliseconds(200) : LogInterval()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { Finish(); }

bool ProgressBar::StderrIsTerminal() { return ::isatty(STDERR_FILENO) == 1; }

void ProgressBar::Update(uint64_t items_done, uint64_t bytes_done) {
  if (!enabled_) return;
  MutexLock lock(mu_);
  items_ = items_done;
  bytes_ = bytes_done;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < interval_) return;
  last_draw_ = now;
  Draw(false);
}

void ProgressBar::Finish() {
  if (!enabled_) return;
  MutexLock lock(mu_);
  if (finished_) return;
  finished_ = true;
  // Off a terminal the command's own summary follows; the interval lines said the rest.
  if (!terminal_) return;
  Draw(true);
  std::fputc('\n', stderr);
}

void ProgressBar::Draw(bool final) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(items_) / elapsed : 0;
  const double mbps = elapsed > 0 ? static_cast<double>(bytes_) / 1e6 / elapsed : 0;
  std::string line = fmt::format("{}{} {}", terminal_ ? "\r" : "", label_, items_);
  if (total_ > 0) {
    line += fmt::format("/{} {} {:3.0f}%", total_, unit_,
                        100.0 * static_cast<double>(items_) / static_cast<double>(total_));
  } else {
    line += " " + unit_;
  }
  line += fmt::format("  {:.0f} {}/s  {:.1f} MB/s", rate, unit_, mbps);
  if (final) {
    line += fmt::format("  {}", FormatDuration(elapsed));
  } else if (total_ > 0 && rate > 0 && items_ <= total_) {
    line += fmt::format("  ETA {}", FormatDuration(static_cast<double>(total_ - items_) / rate));
  }
  // On a terminal: clear the rest of the line, redrawn in place; elsewhere a line of its own.
  line += terminal_ ? "\033[K" : "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace ferry
