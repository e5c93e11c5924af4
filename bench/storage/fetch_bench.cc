// ferry-fetch-bench: how fast the transport moves objects from an S3 endpoint.
//
//   ferry-fetch-bench many --bucket B --prefix P --inflight 16,64,256 [--keep DIR]
//       GETs every object under P with at most K requests in flight, all from the transport's
//       one I/O thread (no thread per request), for each K given. With --keep each object is
//       written to a new file in DIR as it arrives (and the files deleted after the run), as a
//       cache must: the ceiling of a path whose bytes are kept, not dropped.
//   ferry-fetch-bench one --bucket B --key K --parts 1,16
//       reads one large object as a single stream (1) or as N ranged parts at once.
//
// Endpoint and credentials come from the usual AWS_* variables. Output: one line per run with
// objects/s, MB/s and the CPU the process used (user+sys seconds per wall second), which says
// whether ferry's side was the bottleneck.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "base/file_util.h"
#include "ferry/storage/registry.h"
#include "storage/http/transport.h"
#include "storage/s3/s3_endpoint.h"
#include "storage/s3/s3_signer.h"
#include "storage/s3/s3_store.h"

namespace ferry {
namespace {

double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = CpuSeconds();
  void Report(std::string_view label, uint64_t objects, uint64_t bytes) const {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    std::printf("%-28s %8llu objects %9.1f MB  %7.2f s  %8.0f objects/s  %8.1f MB/s  cpu %.2f\n",
                std::string(label).c_str(), static_cast<unsigned long long>(objects),
                static_cast<double>(bytes) / 1e6, s, static_cast<double>(objects) / s,
                static_cast<double>(bytes) / 1e6 / s, (CpuSeconds() - cpu) / s);
    std::fflush(stdout);
  }
};

// A new file that one response body is written into, closed (and left) when dropped.
class KeptFile {
 public:
  explicit KeptFile(std::filesystem::path path)
      : path_(std::move(path)),
        fd_(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)),
        open_errno_(errno) {}
  ~KeptFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  KeptFile(const KeptFile&) = delete;
  KeptFile& operator=(const KeptFile&) = delete;
  // An error names the file and the cause.
  Status Write(std::string_view data) {
    if (fd_ < 0) return ErrnoToStatus(open_errno_, "create", path_);
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoToStatus(errno, "write", path_);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

 private:
  std::filesystem::path path_;
  int fd_;
  int open_errno_;
};

int Many(const std::string& bucket, const std::string& prefix, const std::vector<int>& inflight,
         const std::string& keep) {
  auto config = internal_s3::S3StoreConfigFromEnvironment(bucket);
  if (!config) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 1;
  auto store = internal_s3::MakeS3Store(*config).value();
  auto listing = store->List(prefix, true);
  if (!listing) return std::fprintf(stderr, "%s\n", listing.status().ToString().c_str()), 1;
  const internal_s3::SigV4Signer signer(config->credentials, config->region);
  auto transport = http::DefaultTransport();
  auto kept_path = [&](const std::string& key) {
    return std::filesystem::path(keep) / std::filesystem::path(key).filename();
  };
  for (int k : inflight) {
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0;
    uint64_t done = 0, bytes = 0, failed = 0;
    std::string first_failure;
    Clock clock;
    for (const auto& obj : listing->objects) {
      http::Request request;
      request.url = internal_s3::ObjectUrl(config->endpoint, bucket, obj.key);
      if (!signer.Sign(request, internal_s3::kEmptyPayloadSha256, std::chrono::system_clock::now())
               .ok()) {
        return 1;
      }
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return in_flight < k; });
        ++in_flight;
      }
      auto received = std::make_shared<uint64_t>(0);
      std::shared_ptr<KeptFile> file;
      if (!keep.empty()) {
        file = std::make_shared<KeptFile>(kept_path(obj.key));
      }
      transport->Submit(
          std::move(request),
          [received, file](std::string_view chunk) {
            *received += chunk.size();
            return file ? file->Write(chunk) : Status::Ok();
          },
          [&, received](Result<http::Response> r) {
            std::lock_guard lock(mu);
            --in_flight;
            ++done;
            if (!r || r->status != 200) {
              if (++failed == 1) {
                first_failure = r ? fmt::format("HTTP {}", r->status) : r.status().ToString();
              }
            }
            bytes += *received;
            cv.notify_all();
          });
    }
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return in_flight == 0; });
    clock.Report(fmt::format("ferry transport, {} in flight{}", k, keep.empty() ? "" : ", kept"),
                 done, bytes);
    if (!keep.empty()) {
      // Only the files written: a folder of the same name that made a write fail stays.
      for (const auto& obj : listing->objects) {
        const auto path = kept_path(obj.key);
        std::error_code ec;
        if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
      }
    }
    if (failed > 0) {
      std::printf("  %llu requests failed, the first: %s\n",
                  static_cast<unsigned long long>(failed), first_failure.c_str());
    }
  }
  return 0;
}

int One(const std::string& bucket, const std::string& key, const std::vector<int>& parts) {
  auto opened = OpenUrl(fmt::format("s3://{}/{}", bucket, key));
  if (!opened) return std::fprintf(stderr, "%s\n", opened.status().ToString().c_str()), 1;
  auto& store = *opened->store;
  const auto info = store.Head(opened->key);
  if (!info) return std::fprintf(stderr, "%s\n", info.status().ToString().c_str()), 1;
  for (int p : parts) {
    std::atomic<uint64_t> bytes{0};
    std::atomic<int> failures{0};
    Clock clock;
    const uint64_t part = (info->size + static_cast<uint64_t>(p) - 1) / static_cast<uint64_t>(p);
    {
      std::vector<std::jthread> readers;
      for (int i = 0; i < p; ++i) {
        readers.emplace_back([&, i] {
          const ByteRange range{part * static_cast<uint64_t>(i), part};
          auto r = store.Read(opened->key, range, [&](std::string_view c) {
            bytes += c.size();
            return Status::Ok();
          });
          if (!r) ++failures;
        });
      }
      for (auto& r : readers) r.join();
    }
    clock.Report(p == 1 ? "one stream" : fmt::format("{} ranged parts at once", p), 1, bytes);
    if (failures > 0) std::printf("  %d parts failed\n", failures.load());
  }
  return 0;
}

std::vector<int> Numbers(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(std::stoi(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace
}  // namespace ferry

int main(int argc, char** argv) {
  CLI::App app{"Measure object fetch throughput through ferry's transport"};
  std::string bucket, prefix, key, inflight = "16,64,256", parts = "1,16", keep;
  app.require_subcommand(1);
  auto* many = app.add_subcommand("many", "GET every object under a prefix");
  many->add_option("--bucket", bucket)->required();
  many->add_option("--prefix", prefix)->required();
  many->add_option("--inflight", inflight);
  many->add_option("--keep", keep, "Write each object to a file in this folder as it arrives")
      ->check(CLI::ExistingDirectory);
  auto* one = app.add_subcommand("one", "GET one large object");
  one->add_option("--bucket", bucket)->required();
  one->add_option("--key", key)->required();
  one->add_option("--parts", parts);
  CLI11_PARSE(app, argc, argv);
  if (many->parsed()) return ferry::Many(bucket, prefix, ferry::Numbers(inflight), keep);
  return ferry::One(bucket, key, ferry::Numbers(parts));
}
