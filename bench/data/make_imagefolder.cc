// ferry-make-images: writes a deterministic synthetic ImageFolder of ImageNet-like JPEGs.
//
//   ferry-make-images OUT --count N [--classes C] [--seed S] [--mean-kb 110] [--threads T]
//
// Layout (torchvision ImageFolder): OUT/<class>/<index>.jpg, where <class> is "n" plus the
// class number in 8 digits ("n00000000", ...), so that sorted folder order is class order, and
// <index> is the image number in 8 digits. Image i goes to class i mod C (C defaults to 1000
// and is clamped to N). Each file is the pure function MakeSyntheticJpeg(S, i, mean-kb) of
// synthetic_images.h, so the same command writes byte-identical files on every run, whatever
// --threads is.
//
// Each file is written under a hidden temporary name in its class folder and renamed into
// place, so an interrupted run never leaves a partial JPEG under a final name. There is no
// fsync: the data set is regenerable, and syncing 10,000 small files would dominate the run.
//
// Threads: --threads std::jthread workers (default: all cores) take image numbers from a shared
// counter; the first error stops them all and is reported.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "data/synthetic_images.h"
#include "ferry/result.h"

namespace ferry::bench {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kUsage =
    "usage: ferry-make-images OUT --count N [--classes C] [--seed S] [--mean-kb KB] "
    "[--threads T]\n"
    "  Writes N synthetic JPEGs as OUT/<class>/<index>.jpg (ImageFolder layout).\n"
    "  --count N     number of images (required, >= 1)\n"
    "  --classes C   number of class folders, images assigned round-robin (default 1000,\n"
    "                at most N)\n"
    "  --seed S      data set seed (default 0); same seed, same bytes\n"
    "  --mean-kb KB  mean file size in KiB, 16..160 (default 110, like ImageNet)\n"
    "  --threads T   worker threads (default: all cores); does not change the output\n";

struct Options {
  fs::path out;
  uint64_t count = 0;
  uint64_t classes = 1000;
  uint64_t seed = 0;
  double mean_kb = 110;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
};

template <typename T>
Result<T> ParseNumber(std::string_view flag, std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return InvalidArgumentError(fmt::format("{} needs a number, got '{}'", flag, text));
  }
  return value;
}

Result<Options> ParseArgs(int argc, char** argv) {
  Options options;
  bool have_out = false, have_count = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (!arg.starts_with("--")) {
      if (have_out) return InvalidArgumentError(fmt::format("unexpected argument '{}'", arg));
      options.out = arg;
      have_out = true;
      continue;
    }
    // --flag VALUE or --flag=VALUE
    std::string_view flag = arg, value;
    if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return InvalidArgumentError(fmt::format("{} needs a value", flag));
    }
    if (flag == "--count") {
      FERRY_ASSIGN_OR_RETURN(options.count, ParseNumber<uint64_t>(flag, value));
      have_count = true;
    } else if (flag == "--classes") {
      FERRY_ASSIGN_OR_RETURN(options.classes, ParseNumber<uint64_t>(flag, value));
    } else if (flag == "--seed") {
      FERRY_ASSIGN_OR_RETURN(options.seed, ParseNumber<uint64_t>(flag, value));
    } else if (flag == "--mean-kb") {
      FERRY_ASSIGN_OR_RETURN(options.mean_kb, ParseNumber<double>(flag, value));
    } else if (flag == "--threads") {
      FERRY_ASSIGN_OR_RETURN(options.threads, ParseNumber<unsigned>(flag, value));
    } else {
      return InvalidArgumentError(fmt::format("unknown option '{}'", flag));
    }
  }
  if (!have_out) return InvalidArgumentError("the output folder OUT is missing");
  if (!have_count || options.count == 0) return InvalidArgumentError("--count N (>= 1) is needed");
  if (options.classes == 0) return InvalidArgumentError("--classes must be at least 1");
  // Below about 16 KiB every image is already nearly flat, and above 160 KiB nearly pure noise
  // (see synthetic_images.cc); the mean would miss the request.
  if (!(options.mean_kb >= 16 && options.mean_kb <= 160)) {
    return InvalidArgumentError(
        fmt::format("--mean-kb {} is outside the 16..160 KiB that the synthetic images can average",
                    options.mean_kb));
  }
  if (options.threads == 0) return InvalidArgumentError("--threads must be at least 1");
  options.classes = std::min(options.classes, options.count);
  options.threads = static_cast<unsigned>(std::min<uint64_t>(options.threads, options.count));
  return options;
}

std::string ClassName(uint64_t class_index) { return fmt::format("n{:08d}", class_index); }

// Writes `contents` to a hidden temporary beside `path`, then renames it into place.
Status WriteViaRename(const fs::path& path, std::string_view contents) {
  const fs::path tmp =
      path.parent_path() / fmt::format(".{}.tmp.{}", path.filename().string(), ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, "open", tmp);
  while (!contents.empty()) {
    const ssize_t n = ::write(fd, contents.data(), contents.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoToStatus(error, "write", tmp);
    }
    contents.remove_prefix(static_cast<size_t>(n));
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(error, "close", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(error, "rename", path);
  }
  return Status::Ok();
}

Status Run(const Options& options) {
  for (uint64_t c = 0; c < options.classes; ++c) {
    std::error_code ec;
    const fs::path folder = options.out / ClassName(c);
    fs::create_directories(folder, ec);
    if (ec) return ErrnoToStatus(ec.value(), "create_directories", folder);
  }

  const auto start = std::chrono::steady_clock::now();
  std::vector<uint64_t> sizes(options.count);  // sizes[i] is written by one worker only
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status first_error;
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < options.threads; ++t) {
      workers.emplace_back([&] {
        while (!failed.load(std::memory_order_relaxed)) {
          const uint64_t i = next.fetch_add(1, std::memory_order_relaxed);
          if (i >= options.count) return;
          Result<std::string> jpeg = MakeSyntheticJpeg(options.seed, i, options.mean_kb);
          Status status = jpeg.status();
          if (status.ok()) {
            const fs::path path =
                options.out / ClassName(i % options.classes) / fmt::format("{:08d}.jpg", i);
            status = WriteViaRename(path, *jpeg);
            sizes[i] = jpeg->size();
          }
          if (!status.ok()) {
            std::lock_guard lock(error_mu);
            if (first_error.ok()) first_error = status;
            failed.store(true, std::memory_order_relaxed);
            return;
          }
        }
      });
    }
    // Join before leaving the scope: ~jthread would first request a stop, and the work here is
    // meant to finish (a failure stops the workers through `failed`).
    for (std::jthread& worker : workers) worker.join();
  }
  if (!first_error.ok()) return first_error;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<uint64_t> sorted = sizes;
  std::sort(sorted.begin(), sorted.end());
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  auto kib = [](double bytes) { return bytes / 1024; };
  std::printf(
      "%s\n",
      fmt::format("ferry-make-images: {} files in {} classes under {}: {:.1f} MiB, mean {:.1f} "
                  "KiB (min {:.1f}, p5 {:.1f}, median {:.1f}, p95 {:.1f}, max {:.1f}), {:.2f} s "
                  "on {} threads",
                  options.count, options.classes, options.out.string(),
                  static_cast<double>(total) / (1024 * 1024),
                  kib(static_cast<double>(total) / options.count), kib(sorted.front()),
                  kib(sorted[sorted.size() * 5 / 100]), kib(sorted[sorted.size() / 2]),
                  kib(sorted[sorted.size() * 95 / 100]), kib(sorted.back()), seconds,
                  options.threads)
          .c_str());
  return Status::Ok();
}

}  // namespace
}  // namespace ferry::bench

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "-h" || std::string_view(argv[i]) == "--help") {
      std::fputs(ferry::bench::kUsage.data(), stdout);
      return 0;
    }
  }
  ferry::Result<ferry::bench::Options> options = ferry::bench::ParseArgs(argc, argv);
  if (!options.has_value()) {
    std::fprintf(stderr, "ferry-make-images: %s\n", options.error().message().c_str());
    std::fputs(ferry::bench::kUsage.data(), stderr);
    return 2;
  }
  const ferry::Status status = ferry::bench::Run(*options);
  if (!status.ok()) {
    std::fprintf(stderr, "ferry-make-images: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
