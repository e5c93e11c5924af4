// ferry doctor URL [--dataset] [--json] [--auth]: say which credentials the URL's store uses
// and who they are (doctor_auth.h), measure the link to the store from where this runs, then say
// which streaming settings fill it and why (link_advice.h holds the arithmetic). With --auth only
// the credentials, and whether listing, reading and writing there work.
//
// Measurements, each bounded in requests and bytes:
//   round trip   - the median of --requests sequential 1-byte ranged GETs of the smallest object;
//   1 connection - one ranged GET of up to --bytes of the largest object;
//   aggregate    - --connections ranged GETs at once, --bytes in all, over the largest objects;
//   small requests/s - --requests x 4 1-byte ranged GETs with --connections x 4 in flight;
//   local read   - with --dataset, a 64 MiB file written to and read back from --local.
// With --dataset (URL is an MDS dataset) it also reads index.json, predicts epoch times and
// sizes the cache from the working set of the shuffle (--shuffle-algo, --shuffle-block-size,
// --workers, --batch-size: src/order/working_set.h).
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/human_size.h"
#include "base/mutex.h"
#include "base/python_json.h"
#include "cli/command.h"
#include "cli/doctor_auth.h"
#include "cli/link_advice.h"
#include "ferry/format/index.h"
#include "ferry/storage/registry.h"
#include "order/working_set.h"
#include "storage/http/http_types.h"

namespace ferry::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The bounds of --connections and --requests. Every connection is a thread of its own (four for
// the small-request rate), so 100000 ran the process out of threads; 1024 is also the most
// downloads node_download_concurrency lets a node run at once, so more would measure a link
// ferry never uses. --requests run one after another: 1000 round trips take 100 s at 100 ms,
// and a median of more is no better.
constexpr int kMaxConnections = 1024;
constexpr int kMaxRequests = 1000;

struct DoctorOptions {
  std::string url;
  bool dataset = false;
  bool json = false;
  bool auth = false;
  uint32_t requests = 10;
  uint32_t connections = 16;
  std::string bytes = "256mb";
  std::string local = "/tmp";
  // The order the cache must hold (StreamingDataset's defaults, shuffled).
  std::string shuffle_algo = "py1e";
  uint64_t shuffle_block_size = OrderOptions().shuffle_block_size;
  uint32_t workers = 1;
  uint32_t batch_size = 1;
};

// What the order asked for (and py1s) keeps in use at once on a node reading `index`.
Status AddWorkingSet(const DoctorOptions& o, const DatasetDescription& index, DatasetShape& d) {
  internal_order::StreamFootprint f;
  for (const ShardDescription& s : index.shards) {
    f.samples += s.samples;
    f.bytes += s.raw_data.bytes;  // what a shard takes in the cache
    f.max_shard_bytes = std::max(f.max_shard_bytes, s.raw_data.bytes);
  }
  OrderOptions order;
  order.shuffle = true;
  FERRY_ASSIGN_OR_RETURN(order.algo, ParseShuffleAlgo(o.shuffle_algo));
  order.shuffle_block_size = o.shuffle_block_size;
  order.batch_size = o.batch_size;
  const WorldShape world{.nodes = 1, .ranks_per_node = 1, .workers_per_rank = o.workers};
  d.working_set_bytes = internal_order::EstimateWorkingSet({&f, 1}, order, world).Largest();
  d.order = fmt::format("{}{}, {} worker{} x batch {}", o.shuffle_algo,
                        order.algo == ShuffleAlgo::kPy1s
                            ? std::string()
                            : fmt::format(" with shuffle_block_size {}", o.shuffle_block_size),
                        o.workers, o.workers == 1 ? "" : "s", o.batch_size);
  order.algo = ShuffleAlgo::kPy1s;
  d.py1s_working_set_bytes = internal_order::EstimateWorkingSet({&f, 1}, order, world).Largest();
  return Status::Ok();
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Reads [offset, offset + length) and throws the bytes away; returns the bytes read.
Result<uint64_t> Drain(ObjectStore& store, const std::string& key, uint64_t offset,
                       uint64_t length) {
  uint64_t got = 0;
  FERRY_RETURN_IF_ERROR(store
                            .Read(key, ByteRange{offset, length},
                                  [&](std::string_view chunk) {
                                    got += chunk.size();
                                    return Status::Ok();
                                  })
                            .status());
  return got;
}

// Runs `count` calls of `fn(i)` with `parallel` threads; the first error wins.
Status RunParallel(uint32_t count, uint32_t parallel, const std::function<Status(uint32_t)>& fn) {
  std::atomic<uint32_t> next{0};
  Mutex mu;
  Status first;
  {
    std::vector<std::jthread> threads;
    for (uint32_t t = 0; t < std::min(parallel, count); ++t) {
      threads.emplace_back([&] {
        for (uint32_t i = next++; i < count; i = next++) {
          if (Status s = fn(i); !s.ok()) {
            MutexLock lock(mu);
            if (first.ok()) first = std::move(s);
            return;
          }
        }
      });
    }
  }
  return first;
}

// Write then read back a file in `folder`: how fast epoch 2 can read the cache.
std::optional<double> LocalReadRate(const std::string& folder) {
  const std::filesystem::path path =
      std::filesystem::path(folder) / fmt::format(".ferry-doctor-{}", ::getpid());
  const std::string block(1 << 20, 'x');
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return std::nullopt;
  bool ok = true;
  for (int i = 0; i < 64 && ok; ++i) ok = ::write(fd, block.data(), block.size()) == 1 << 20;
  ::fsync(fd);
  ::close(fd);
  std::optional<double> rate;
  const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ok && in >= 0) {
    std::string buffer(1 << 20, '\0');
    const auto start = Clock::now();
    uint64_t total = 0;
    for (ssize_t n; (n = ::read(in, buffer.data(), buffer.size())) > 0;) total += n;
    rate = static_cast<double>(total) / std::max(Seconds(start), 1e-6);
  }
  if (in >= 0) ::close(in);
  std::filesystem::remove(path);
  return rate;
}

// --auth: the credentials report alone; exit status 1 when something in it failed.
Result<int> RunAuthDoctor(const DoctorOptions& o) {
  FERRY_ASSIGN_OR_RETURN(const AuthReport report, CheckAuth(o.url, {}));
  if (o.json) {
    std::printf("%s\n", DumpPythonJson(AuthReportJson(report), JsonKeyOrder::kInsertion).c_str());
  } else {
    for (const std::string& line : FormatAuthReport(report)) std::printf("%s\n", line.c_str());
  }
  return report.ok() ? 0 : 1;
}

Result<int> RunDoctor(const DoctorOptions& o) {
  if (o.auth) return RunAuthDoctor(o);
  FERRY_ASSIGN_OR_RETURN(const uint64_t budget, ParseHumanSize(o.bytes));
  if (budget == 0) return InvalidArgumentError("--bytes must be above zero");
  // Who the requests below go as; a failure here is what the measurements would fail on.
  FERRY_ASSIGN_OR_RETURN(const AuthReport auth, CheckAuth(o.url, {.checks = false}));
  if (!auth.credentials.ok()) {
    for (const std::string& line : FormatAuthReport(auth))
      std::fprintf(stderr, "%s\n", line.c_str());
    return auth.credentials;
  }
  FERRY_ASSIGN_OR_RETURN(StoreAndKey target, OpenUrl(o.url));
  ObjectStore& store = *target.store;
  std::string prefix = target.key;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  FERRY_ASSIGN_OR_RETURN(ListResult listing, store.List(prefix, /*recursive=*/true));
  std::vector<ObjectInfo> objects;
  for (auto& obj : listing.objects) {
    if (obj.size > 0) objects.push_back(std::move(obj));
  }
  if (objects.empty()) {
    return NotFoundError(fmt::format("{}: no objects to measure with", o.url));
  }
  std::sort(objects.begin(), objects.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.size > b.size; });
  const ObjectInfo& largest = objects.front();
  const ObjectInfo& smallest = objects.back();
  LinkMeasurements m;

  // Round trip: sequential tiny requests, the median.
  std::vector<double> times;
  for (uint32_t i = 0; i < o.requests; ++i) {
    const auto start = Clock::now();
    FERRY_RETURN_IF_ERROR(Drain(store, smallest.key, 0, 1).status());
    times.push_back(Seconds(start));
  }
  std::sort(times.begin(), times.end());
  m.rtt_s = times[times.size() / 2];

  // One connection.
  {
    const uint64_t length = std::min<uint64_t>(largest.size, budget / 4);
    const auto start = Clock::now();
    FERRY_ASSIGN_OR_RETURN(const uint64_t got, Drain(store, largest.key, 0, length));
    m.connection_bytes_per_s = static_cast<double>(got) / std::max(Seconds(start), 1e-6);
  }

  // Many connections: equal ranges of the largest objects, round robin.
  {
    const uint64_t each = std::max<uint64_t>(1, budget / o.connections);
    std::atomic<uint64_t> total{0};
    const auto start = Clock::now();
    FERRY_RETURN_IF_ERROR(RunParallel(o.connections, o.connections, [&](uint32_t i) -> Status {
      const ObjectInfo& obj = objects[i % objects.size()];
      const uint64_t slices = std::max<uint64_t>(1, obj.size / each);
      const uint64_t offset = (i / objects.size()) % slices * each;
      FERRY_ASSIGN_OR_RETURN(const uint64_t got,
                             Drain(store, obj.key, offset, std::min(each, obj.size - offset)));
      total += got;
      return Status::Ok();
    }));
    m.aggregate_bytes_per_s = static_cast<double>(total) / std::max(Seconds(start), 1e-6);
    m.aggregate_connections = o.connections;
  }

  // Small requests with many in flight.
  {
    const uint32_t count = o.requests * 4;
    const auto start = Clock::now();
    FERRY_RETURN_IF_ERROR(RunParallel(count, o.connections * 4, [&](uint32_t i) -> Status {
      return Drain(store, objects[objects.size() - 1 - i % objects.size()].key, 0, 1).status();
    }));
    m.small_requests_per_s = count / std::max(Seconds(start), 1e-6);
  }

  std::optional<DatasetShape> shape;
  if (o.dataset) {
    FERRY_ASSIGN_OR_RETURN(const std::string text, store.Get(prefix + "index.json"));
    FERRY_ASSIGN_OR_RETURN(const DatasetDescription index, ParseIndex(text, o.url + "/index.json"));
    DatasetShape d;
    for (const ShardDescription& s : index.shards) {
      d.samples += s.samples;
      d.bytes += s.zip_data ? s.zip_data->bytes : s.raw_data.bytes;
    }
    d.shards = index.shards.size();
    FERRY_RETURN_IF_ERROR(AddWorkingSet(o, index, d));
    shape = d;
    m.local_read_bytes_per_s = LocalReadRate(o.local);
  }
  const LinkAdvice a = AdviseLink(m, shape);

  if (o.json) {
    nlohmann::ordered_json j;
    j["url"] = http::RedactUrl(o.url);
    j["credentials"] = AuthReportJson(auth);
    j["rtt_s"] = m.rtt_s;
    j["connection_bytes_per_s"] = m.connection_bytes_per_s;
    j["aggregate_bytes_per_s"] = m.aggregate_bytes_per_s;
    j["aggregate_connections"] = m.aggregate_connections;
    j["small_requests_per_s"] = m.small_requests_per_s;
    j["window_bytes"] = a.window_bytes;
    j["connections"] = a.connections;
    j["shard_bytes"] = a.shard_bytes;
    j["download_concurrency"] = a.shards_in_flight;
    j["download_parts"] = a.parts_per_shard;
    if (a.predownload_samples) j["predownload"] = *a.predownload_samples;
    if (a.cache_limit_bytes) j["cache_limit_bytes"] = *a.cache_limit_bytes;
    if (a.min_cache_limit_bytes) j["min_cache_limit_bytes"] = *a.min_cache_limit_bytes;
    if (shape && shape->working_set_bytes) j["working_set_bytes"] = *shape->working_set_bytes;
    if (a.epoch1_s) j["epoch1_s"] = *a.epoch1_s;
    if (a.epoch2_s) j["epoch2_s"] = *a.epoch2_s;
    j["reasoning"] = a.reasoning;
    std::printf("%s\n", DumpPythonJson(j, JsonKeyOrder::kInsertion).c_str());
    return 0;
  }
  for (const std::string& line : FormatAuthReport(auth)) std::printf("%s\n", line.c_str());
  std::printf("%s\n", http::RedactUrl(o.url).c_str());
  std::printf("  round trip       %.1f ms (median of %u)\n", m.rtt_s * 1000, o.requests);
  std::printf("  one connection   %s/s\n",
              FormatBytes(static_cast<uint64_t>(m.connection_bytes_per_s)).c_str());
  std::printf("  %u connections  %s/s\n", m.aggregate_connections,
              FormatBytes(static_cast<uint64_t>(m.aggregate_bytes_per_s)).c_str());
  std::printf("  small requests   %.0f/s\n", m.small_requests_per_s);
  std::printf("settings:\n");
  for (const std::string& line : a.reasoning) std::printf("  %s\n", line.c_str());
  return 0;
}

}  // namespace

Command AddDoctorCommand(CLI::App& parent) {
  auto o = std::make_shared<DoctorOptions>();
  CLI::App* app = parent.add_subcommand(
      "doctor", "Measure the link to a store and recommend streaming settings");
  app->add_option("url", o->url, "Where the data is (s3://, az://, gs://, https://, a path)")
      ->required();
  app->add_flag("--dataset", o->dataset,
                "URL is an MDS dataset: also predict epoch 1 and epoch 2 times");
  app->add_flag("--json", o->json, "One JSON object with the measurements and the advice");
  app->add_flag("--auth", o->auth,
                "Only the credentials: the chain of sources, which one answered, the identity "
                "and expiry, and whether list, read and write work at URL (write puts a small "
                ".ferry-doctor-* object there and removes it); exit status 1 if any failed");
  app->add_option("--requests", o->requests, "Sequential tiny requests for the round trip")
      ->check(CLI::Range(1, kMaxRequests))
      ->capture_default_str();
  app->add_option("--connections", o->connections, "Connections for the aggregate bandwidth")
      ->check(CLI::Range(1, kMaxConnections))
      ->capture_default_str();
  app->add_option("--bytes", o->bytes, "Bytes read for the aggregate bandwidth (at most)")
      ->capture_default_str();
  app->add_option("--local", o->local, "Where a cache would live (local read speed)")
      ->capture_default_str();
  app->add_option("--shuffle-algo", o->shuffle_algo,
                  "With --dataset: the shuffle whose working set the cache must hold")
      ->check(CLI::IsMember({"naive", "py1s", "py1b", "py1br", "py1e"}))
      ->capture_default_str();
  app->add_option("--shuffle-block-size", o->shuffle_block_size, "With --dataset: its block")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30))
      ->capture_default_str();
  app->add_option("--workers", o->workers,
                  "With --dataset: readers on the node (ranks x DataLoader workers)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app->add_option("--batch-size", o->batch_size, "With --dataset: the per-worker batch")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  return {app, [o] { return RunDoctor(*o); }};
}

}  // namespace ferry::cli
