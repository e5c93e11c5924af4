#include "cli/stream_report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/stoppable_sleep.h"
#include "base/subprocess.h"
#include "ferry/metrics/metrics.h"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

constexpr auto kSampleEvery = std::chrono::milliseconds(250);
// The most points a series keeps: past it, neighbouring points are averaged in pairs (a run of
// days still draws whole, in a few hundred KB).
constexpr size_t kMaxPoints = 8192;

// The folder holding the ferry package that goes with this binary, or "" (then the
// interpreter's own path must have it).
std::string PackageParent() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path dir = exe.parent_path();
  // A wheel: <site-packages>/ferry/bin/ferry.
  if (dir.filename() == "bin" && fs::exists(dir.parent_path() / "__init__.py", ec)) {
    return dir.parent_path().parent_path().string();
  }
  // The build tree: <build>/src/cli/ferry beside <build>/python/ferry.
  const fs::path build = dir.parent_path().parent_path() / "python";
  if (fs::exists(build / "ferry" / "__init__.py", ec)) return build.string();
  return "";
}

std::string Interpreter() {
  if (const char* python = std::getenv("FERRY_PYTHON"); python != nullptr && *python != '\0') {
    return python;
  }
  return ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

}  // namespace

StreamReport::StreamReport(std::string url)
    : url_(std::move(url)), start_(std::chrono::steady_clock::now()) {
  series_ = {{"t", nlohmann::ordered_json::array()},
             {"read_bytes", nlohmann::ordered_json::array()},
             {"in_flight", nlohmann::ordered_json::array()},
             {"cache_bytes", nlohmann::ordered_json::array()},
             {"samples", nlohmann::ordered_json::array()}};
  Sample();
  sampler_ = std::jthread([this](std::stop_token stop) {
    while (SleepUnlessStopped(kSampleEvery, stop)) Sample();
  });
}

StreamReport::~StreamReport() {
  sampler_.request_stop();
  if (sampler_.joinable()) sampler_.join();
}

void StreamReport::Sample() {
  const std::map<std::string, int64_t> v = metrics::Values();
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  MutexLock lock(mu_);
  series_["t"].push_back(t);
  series_["read_bytes"].push_back(metrics::StoreTotal(v, "bytes_read"));
  series_["in_flight"].push_back(metrics::ValueOr0(v, "/ferry/stream/bytes_in_flight"));
  series_["cache_bytes"].push_back(metrics::ValueOr0(v, "/ferry/cache/downloaded_bytes") -
                                   metrics::ValueOr0(v, "/ferry/cache/evicted_bytes"));
  series_["samples"].push_back(metrics::ValueOr0(v, "/ferry/stream/samples"));
  if (series_["t"].size() < kMaxPoints) return;
  for (auto& [name, column] : series_.items()) {
    nlohmann::ordered_json halved = nlohmann::ordered_json::array();
    for (size_t i = 0; i + 1 < column.size(); i += 2) {
      halved.push_back((column[i].get<double>() + column[i + 1].get<double>()) / 2);
    }
    column = std::move(halved);
  }
}

void StreamReport::AddEpoch(nlohmann::ordered_json epoch) { epochs_.push_back(std::move(epoch)); }

Status StreamReport::Write(const std::string& path) {
  sampler_.request_stop();
  if (sampler_.joinable()) sampler_.join();
  Sample();
  nlohmann::ordered_json run;
  run["url"] = url_;
  run["epochs"] = epochs_;
  {
    MutexLock lock(mu_);
    run["series"] = series_;
  }
  const fs::path out = fs::absolute(path);
  const fs::path data = TemporaryPathFor(out.string() + ".json");
  FERRY_RETURN_IF_ERROR(WriteFileAtomically(data, run.dump()));
  // The package beside this binary goes first on the child's path, set through env(1): this
  // process's own environment is not changed while its other threads may read it.
  std::vector<std::string> argv = {"/usr/bin/env"};
  if (const std::string parent = PackageParent(); !parent.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    argv.push_back("PYTHONPATH=" + (old != nullptr && *old != '\0' ? parent + ":" + old : parent));
  }
  for (std::string arg : {Interpreter(), std::string("-m"), std::string("ferry._report"),
                          std::string("stream"), data.string(), out.string()}) {
    argv.push_back(std::move(arg));
  }
  auto done = RunSubprocess(argv, std::chrono::minutes(2));
  Status status =
      done.status().WithContext(fmt::format("{}: the report was not written", out.string()));
  if (status.ok() && done->exit_code != 0) {
    status = InternalError(fmt::format(
        "{}: the report was not written: {} -m ferry._report failed ({}): {}", out.string(),
        Interpreter(), done->exit_code, done->err.empty() ? done->out : done->err));
  }
  std::error_code ec;
  if (status.ok()) {
    fs::remove(data, ec);
    return status;
  }
  // The run's figures are not lost with the page: kept, and named, to draw again.
  const fs::path kept = out.string() + ".json";
  fs::rename(data, kept, ec);
  const std::string figures = (ec ? data : kept).string();
  return Status(status.code(),
                fmt::format("{}; the run's figures are kept in {} (python3 -m ferry._report "
                            "stream {} {} draws the page)",
                            status.message(), figures, figures, out.string()));
}

}  // namespace ferry::cli
