// ferry stream URL --local DIR: iterate an MDS dataset through the streaming engine without
// decoding, and say how fast it went - the simplest way to measure a link and the engine.
//
// Each epoch runs the workers of one rank (--world NODES,RANKS,WORKERS --rank R; by default the
// whole world is 1,1,1) in parallel threads, each with its own prefetching iterator, as a
// DataLoader's workers would. Per epoch it prints samples/s, MB/s (payload bytes), time to the
// first sample, and what the cache and the remote did; --json prints one JSON object per epoch.
// --sample-ids FILE writes "EPOCH SAMPLE_ID" lines for what the rank read, so that the ranks of a
// world run as separate processes can be checked together (every sample, each once).
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "base/file_util.h"
#include "base/human_size.h"
#include "base/mutex.h"
#include "base/python_json.h"
#include "cli/command.h"
#include "cli/metrics_port.h"
#include "cli/progress.h"
#include "cli/stream_report.h"
#include "ferry/metrics/metrics.h"
#include "ferry/storage/registry.h"
#include "ferry/stream/streaming_dataset.h"
#include "format/shard_pattern.h"
#include "storage/mirror_store.h"

namespace ferry::cli {
namespace {

struct StreamCommandOptions {
  std::string url;
  std::string local;
  std::string split;
  std::vector<std::string> mirrors;
  std::vector<std::string> egress;  // URL=LABEL[,USD_PER_GB[,BUDGET[,EPOCH_BUDGET]]]
  std::vector<std::string> peers;
  std::string peer_self;
  uint64_t epochs = 1;
  bool shuffle = false;
  std::string shuffle_algo = "py1e";
  uint64_t seed = 9176;
  std::string predownload = "auto";
  std::string concurrency = "auto";
  std::string download_parts = "auto";
  std::optional<uint32_t> node_concurrency;
  std::string cache_limit;
  bool strict_cache_limit = false;
  bool offline = false;
  std::string world = "1,1,1";
  uint32_t rank = 0;
  uint32_t batch_size = 1;
  bool json = false;
  bool touch = false;
  bool quiet = false;
  std::string report;     // --report: an HTML page of the run
  int metrics_port = -1;  // -1: no metrics server
  std::string metrics_host = "127.0.0.1";
  std::string validate_hash;
  bool no_digest_records = false;
  bool no_store_checksums = false;
  std::string sample_ids;
};

Result<std::optional<uint64_t>> Auto(std::string_view what, const std::string& text) {
  if (text == "auto") return std::optional<uint64_t>();
  try {
    return std::optional<uint64_t>(std::stoull(text));
  } catch (const std::exception&) {
    return InvalidArgumentError(fmt::format("--{}: '{}' is not a number or auto", what, text));
  }
}

// --egress URL=LABEL[,USD_PER_GB[,BUDGET[,EPOCH_BUDGET]]] -> spec.egress[URL].
Status ParseEgress(const std::vector<std::string>& given, StreamSpec& spec) {
  for (const std::string& text : given) {
    const size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError(
          fmt::format("--egress {}: expected URL=LABEL[,USD_PER_GB[,BUDGET[,EPOCH_BUDGET]]] (e.g. "
                      "s3://source/train=aws-us-east-1,0.09,500gb)",
                      text));
    }
    EgressOptions egress;
    std::vector<std::string> fields;
    std::string_view rest = std::string_view(text).substr(eq + 1);
    while (true) {
      const size_t comma = rest.find(',');
      fields.emplace_back(rest.substr(0, comma));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (fields.size() > 4)
      return InvalidArgumentError(fmt::format("--egress {}: too many fields", text));
    egress.label = fields[0];
    if (fields.size() > 1 && !fields[1].empty()) {
      char* end = nullptr;
      egress.usd_per_gb = std::strtod(fields[1].c_str(), &end);
      if (end == fields[1].c_str() || *end != '\0' || egress.usd_per_gb < 0) {
        return InvalidArgumentError(
            fmt::format("--egress {}: '{}' is not a price in USD per GB", text, fields[1]));
      }
    }
    if (fields.size() > 2 && !fields[2].empty()) {
      FERRY_ASSIGN_OR_RETURN(const uint64_t budget, ParseHumanSize(fields[2]));
      egress.budget = budget;
    }
    if (fields.size() > 3 && !fields[3].empty()) {
      FERRY_ASSIGN_OR_RETURN(const uint64_t budget, ParseHumanSize(fields[3]));
      egress.epoch_budget = budget;
    }
    spec.egress[text.substr(0, eq)] = std::move(egress);
  }
  return Status::Ok();
}

// Each source's bytes this epoch, and what they cost at the prices given: {label: {"bytes",
// "usd"}}.
nlohmann::ordered_json SourceBytes(const StreamSpec& spec,
                                   const std::map<std::string, int64_t>& before,
                                   const std::map<std::string, int64_t>& after) {
  std::map<std::string, std::pair<std::string, double>> known;  // counter -> label, price
  for (const auto& [url, egress] : spec.egress) {
    const std::string label = SourceLabel({.label = egress.label}, url);
    known[SourceCounterName(label, "bytes_read")] = {label, egress.usd_per_gb};
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  constexpr std::string_view kPrefix = "/ferry/source/";
  constexpr std::string_view kSuffix = "/bytes_read";
  for (const auto& [name, value] : after) {
    if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) continue;
    const int64_t bytes = value - metrics::ValueOr0(before, name);
    if (bytes <= 0) continue;
    const auto it = known.find(name);
    const std::string label =
        it != known.end()
            ? it->second.first
            : name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    const double price = it != known.end() ? it->second.second : 0;
    out[label] = {{"bytes", bytes}, {"usd", static_cast<double>(bytes) / 1e9 * price}};
  }
  return out;
}

Result<int> RunStream(const StreamCommandOptions& o) {
  StreamingOptions options;
  StreamSpec spec;
  FERRY_RETURN_IF_ERROR(ParseEgress(o.egress, spec));
  spec.split = o.split;
  if (o.local.empty()) {
    // No cache folder: the URL must be a local dataset, read in place.
    if (UrlScheme(o.url) != "file") {
      return InvalidArgumentError("--local is required for a remote dataset (the cache folder)");
    }
    if (internal_format::IsShardPattern(o.url)) {
      return InvalidArgumentError("--local is required for a shard pattern (the cache folder)");
    }
    spec.local = o.url;
  } else {
    spec.remote = o.url;
    spec.mirrors = o.mirrors;
    spec.local = o.local;
  }
  if (!o.mirrors.empty() && o.local.empty()) {
    return InvalidArgumentError("--mirror needs --local: mirrors are remotes, read into a cache");
  }
  if (!o.egress.empty() && o.local.empty()) {
    return InvalidArgumentError("--egress needs --local: egress is counted on remotes");
  }
  options.streams = {spec};
  options.order.shuffle = o.shuffle;
  FERRY_ASSIGN_OR_RETURN(options.order.algo, ParseShuffleAlgo(o.shuffle_algo));
  options.order.seed = o.seed;
  options.order.batch_size = o.batch_size;
  FERRY_ASSIGN_OR_RETURN(options.predownload, Auto("predownload", o.predownload));
  FERRY_ASSIGN_OR_RETURN(auto concurrency, Auto("concurrency", o.concurrency));
  if (concurrency) {
    options.download_concurrency =
        static_cast<uint32_t>(std::min<uint64_t>(*concurrency, UINT32_MAX));
  }
  FERRY_ASSIGN_OR_RETURN(auto parts, Auto("download-parts", o.download_parts));
  // Ranges are the engine's to check; a value past uint32 must not wrap into one.
  if (parts) options.download_parts = static_cast<uint32_t>(std::min<uint64_t>(*parts, UINT32_MAX));
  options.node_download_concurrency = o.node_concurrency;
  if (!o.cache_limit.empty()) {
    FERRY_ASSIGN_OR_RETURN(uint64_t limit, ParseHumanSize(o.cache_limit));
    options.cache_limit = limit;
  }
  options.strict_cache_limit = o.strict_cache_limit;
  options.offline = o.offline;
  if (!o.validate_hash.empty()) options.validate_hash = o.validate_hash;
  options.digest_records = !o.no_digest_records;
  options.store_checksums = !o.no_store_checksums;
  options.peers.addresses = o.peers;
  options.peers.self = o.peer_self;

  WorldShape world;
  if (std::sscanf(o.world.c_str(), "%u,%u,%u", &world.nodes, &world.ranks_per_node,
                  &world.workers_per_rank) != 3) {
    return InvalidArgumentError(fmt::format("--world '{}': expected NODES,RANKS,WORKERS", o.world));
  }
  const uint32_t ranks = world.nodes * world.ranks_per_node;
  if (o.rank >= ranks) {
    return InvalidArgumentError(fmt::format("--rank {} is not below {} ranks", o.rank, ranks));
  }

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> ids(nullptr, &std::fclose);
  if (!o.sample_ids.empty()) {
    ids.reset(std::fopen(o.sample_ids.c_str(), "w"));
    if (!ids) return ErrnoToStatus(errno, "create --sample-ids file", o.sample_ids);
  }

  const auto opened_at = std::chrono::steady_clock::now();
  FERRY_ASSIGN_OR_RETURN(auto dataset, StreamingDataset::Open(options));
  FERRY_ASSIGN_OR_RETURN(const auto metrics_server,
                         ServeMetrics(o.metrics_port, o.metrics_host, o.local, !o.json));
  std::optional<StreamReport> report;
  if (!o.report.empty()) report.emplace(o.url);
  if (!o.json) {
    std::printf("dataset: %llu samples in %zu shards; rank %u of %u, %u workers\n",
                static_cast<unsigned long long>(dataset->num_samples()),
                dataset->indexes()[0]->shards.size(), o.rank, ranks, world.workers_per_rank);
  }
  for (uint64_t epoch = 0; epoch < o.epochs; ++epoch) {
    const auto before = metrics::Values();
    const auto start = epoch == 0 ? opened_at : std::chrono::steady_clock::now();
    std::atomic<uint64_t> samples{0}, bytes{0}, checksum{0};
    std::atomic<int64_t> first_ns{-1};
    std::atomic<int64_t> first_batch_ns{-1};  // one worker's first --batch-size samples
    Mutex mu;
    Status failure;
    ProgressBar progress(fmt::format("epoch {}", epoch + 1), "samples",
                         ranks == 1 ? dataset->num_samples() : 0, !o.json && !o.quiet);
    {
      std::vector<std::jthread> workers;
      for (uint32_t w = 0; w < world.workers_per_rank; ++w) {
        workers.emplace_back([&, w] {
          IterateOptions it_options;
          it_options.world = world;
          it_options.worker = {o.rank / world.ranks_per_node, o.rank % world.ranks_per_node, w};
          it_options.epoch = epoch;
          auto it = dataset->Iterate(it_options);
          Status status = it.status();
          uint64_t mine = 0;
          while (status.ok()) {
            auto sample = (*it)->Next();
            if (!sample) {
              status = sample.status();
              break;
            }
            if (!*sample) break;
            if (first_ns.load() < 0) {
              int64_t expected = -1;
              first_ns.compare_exchange_strong(expected,
                                               std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   std::chrono::steady_clock::now() - start)
                                                   .count());
            }
            if (++mine == std::max<uint32_t>(o.batch_size, 1) && first_batch_ns.load() < 0) {
              int64_t expected = -1;
              first_batch_ns.compare_exchange_strong(
                  expected, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count());
            }
            uint64_t n = 0;
            for (auto f : (*sample)->fields) {
              n += f.size();
              // --touch reads every byte, as a consumer that copies or decodes would.
              if (o.touch) checksum += XXH3_64bits(f.data(), f.size());
            }
            bytes += n;
            if (++samples % 256 == 0) progress.Update(samples.load(), bytes.load());
            if (ids) {  // straight to the (buffered) file: no epoch-long list in memory
              MutexLock lock(mu);
              std::fprintf(ids.get(), "%llu %llu\n", static_cast<unsigned long long>(epoch),
                           static_cast<unsigned long long>((*sample)->id));
            }
          }
          if (!status.ok()) {
            MutexLock lock(mu);
            if (failure.ok()) failure = status;
          }
        });
      }
      for (auto& w : workers) w.join();
    }
    progress.Finish();
    FERRY_RETURN_IF_ERROR(failure);
    if (ids) {
      if (std::fflush(ids.get()) != 0) {
        return ErrnoToStatus(errno, "write --sample-ids file", o.sample_ids);
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto after = metrics::Values();
    auto delta = [&](const std::string& name) {
      return metrics::ValueOr0(after, name) - metrics::ValueOr0(before, name);
    };
    const double first_s = static_cast<double>(first_ns.load()) / 1e9;
    nlohmann::ordered_json j;
    j["epoch"] = epoch;
    j["samples"] = samples.load();
    j["seconds"] = seconds;
    j["samples_per_s"] = static_cast<double>(samples.load()) / seconds;
    j["bytes"] = bytes.load();
    j["mb_per_s"] = static_cast<double>(bytes.load()) / 1e6 / seconds;
    j["bytes_fetched"] = delta("/ferry/cache/downloaded_bytes");
    j["remote_requests"] =
        metrics::StoreTotal(after, "requests") - metrics::StoreTotal(before, "requests");
    j["remote_errors"] =
        metrics::StoreTotal(after, "errors") - metrics::StoreTotal(before, "errors");
    j["cache_hits"] = delta("/ferry/cache/hits");
    j["cache_misses"] = delta("/ferry/cache/misses");
    j["downloads"] = delta("/ferry/cache/downloads");
    j["evictions"] = delta("/ferry/cache/evictions");
    j["direct_reads"] = delta("/ferry/stream/direct_reads");
    j["landed_reads"] = delta("/ferry/stream/landed_reads");
    j["wait_s"] = static_cast<double>(delta("/ferry/stream/wait_ns")) / 1e9;
    // What the stores' throttling and the free checksums did (request_throttle.h,
    // store_checksum.h).
    j["throttled"] = delta("/ferry/storage/throttled");
    j["throttle_wait_s"] = static_cast<double>(delta("/ferry/storage/throttle_wait_ns")) / 1e9;
    j["checksum_failures"] = delta("/ferry/cache/checksum_failures");
    // The cluster cache (peer_store.h, peer_server.h): bytes this node got from its peers, and
    // served to them.
    j["peer_bytes"] = delta("/ferry/peer/bytes_read");
    j["peer_failovers"] = delta("/ferry/peer/failovers");
    j["peer_served_bytes"] = delta("/ferry/peer/served_bytes");
    // Bytes per source, and their egress at the prices given (mirror_store.h).
    j["sources"] = SourceBytes(spec, before, after);
    j["time_to_first_sample_s"] = first_s;
    j["time_to_first_batch_s"] = static_cast<double>(first_batch_ns.load()) / 1e9;
    j["predownload"] = metrics::ValueOr0(after, "/ferry/stream/predownload");
    j["concurrency"] = metrics::ValueOr0(after, "/ferry/stream/concurrency");
    // The part count of the next large download (the tuner's latest choice, in auto).
    j["download_parts"] = options.download_parts
                              ? int64_t{*options.download_parts}
                              : metrics::ValueOr0(after, "/ferry/cache/download_parts");
    if (report) report->AddEpoch(j);
    if (o.json) {
      std::printf("%s\n", DumpPythonJson(j, JsonKeyOrder::kInsertion).c_str());
    } else {
      std::printf(
          "epoch %llu: %llu samples in %.2f s: %.0f samples/s, %.1f MB/s; first sample after "
          "%.3f s; fetched %s in %lld remote requests; cache %lld hits, %lld misses, %lld "
          "evictions; waited %.2f s for shards\n",
          static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(samples.load()),
          seconds, j["samples_per_s"].get<double>(), j["mb_per_s"].get<double>(), first_s,
          FormatBytes(static_cast<uint64_t>(j["bytes_fetched"].get<int64_t>())).c_str(),
          static_cast<long long>(j["remote_requests"].get<int64_t>()),
          static_cast<long long>(j["cache_hits"].get<int64_t>()),
          static_cast<long long>(j["cache_misses"].get<int64_t>()),
          static_cast<long long>(j["evictions"].get<int64_t>()), j["wait_s"].get<double>());
      for (const auto& [label, source] : j["sources"].items()) {
        const double usd = source["usd"].get<double>();
        std::printf(
            "  source %s: %s%s\n", label.c_str(),
            FormatBytes(static_cast<uint64_t>(source["bytes"].get<int64_t>())).c_str(),
            usd > 0 ? fmt::format(", about ${:.{}f} of egress", usd, usd < 1 ? 4 : 2).c_str() : "");
      }
      if (delta("/ferry/peer/reads") > 0 || j["peer_served_bytes"].get<int64_t>() > 0) {
        std::printf(
            "  peers: got %s from them (%lld failovers to the remote), served %s\n",
            FormatBytes(static_cast<uint64_t>(j["peer_bytes"].get<int64_t>())).c_str(),
            static_cast<long long>(j["peer_failovers"].get<int64_t>()),
            FormatBytes(static_cast<uint64_t>(j["peer_served_bytes"].get<int64_t>())).c_str());
      }
    }
    std::fflush(stdout);
  }
  if (report) {
    FERRY_RETURN_IF_ERROR(report->Write(o.report));
    if (!o.json) std::fprintf(stderr, "report: %s\n", o.report.c_str());
  }
  return 0;
}

}  // namespace

Command AddStreamCommand(CLI::App& parent) {
  auto o = std::make_shared<StreamCommandOptions>();
  CLI::App* app = parent.add_subcommand(
      "stream", "Iterate a dataset through the streaming engine (no decoding) and measure it");
  app->add_option("url", o->url,
                  "Dataset URL (s3://, az://, gs://, https://, or a local path); for WebDataset "
                  "tars also a brace pattern or '::' list of them ('s3://b/train-{000..127}.tar')")
      ->required();
  app->add_option("--local", o->local, "Cache folder (required for a remote dataset)");
  app->add_option("--split", o->split, "Sub-folder of the dataset");
  app->add_option("--mirror", o->mirrors,
                  "Another place holding the same dataset, tried after URL (repeatable, in "
                  "preference order): a failed read goes on from the next at the byte it reached");
  app->add_option(
      "--egress", o->egress,
      "URL=LABEL[,USD_PER_GB[,BUDGET[,EPOCH_BUDGET]]] for the remote or a --mirror (repeatable): "
      "its name in the report, its egress price (the report estimates the cost), "
      "and the bytes it may deliver in all and per epoch (then reads go to the "
      "other mirrors, or stop with an error), e.g. "
      "s3://source/train=aws-us-east-1,0.09,500gb,50gb");
  app->add_option("--peer", o->peers,
                  "host:port of a node's peer server, this node's included (repeatable; default "
                  "FERRY_PEERS, comma-separated): each shard is fetched from the remote by one "
                  "node and served to the others from its cache (the token: FERRY_PEER_TOKEN)");
  app->add_option("--peer-self", o->peer_self,
                  "Which --peer this node is (default FERRY_PEER_SELF, else the one with this "
                  "machine's hostname); its server listens on that port");
  app->add_option("--epochs", o->epochs, "Epochs to run")->capture_default_str();
  app->add_flag("--shuffle", o->shuffle, "Shuffle the order");
  app->add_option("--shuffle-algo", o->shuffle_algo, "naive, py1s, py1b, py1br or py1e")
      ->capture_default_str();
  app->add_option("--seed", o->seed, "Shuffle seed")->capture_default_str();
  app->add_option("--predownload", o->predownload, "Samples fetched ahead per worker, or auto")
      ->capture_default_str();
  app->add_option("--concurrency", o->concurrency, "Shards downloaded at once, or auto")
      ->capture_default_str();
  app->add_option("--download-parts", o->download_parts,
                  "Ranged parts a shard of 32 MiB or more comes in, at once (1 to 64), or auto: "
                  "chosen from the downloads' rates (ferry doctor measures it ahead)")
      ->capture_default_str();
  app->add_option("--node-concurrency", o->node_concurrency,
                  "Shards downloaded at once into the cache folder by every process on the node "
                  "that reads it with this value (default: no limit beyond --concurrency)");
  app->add_option("--cache-limit", o->cache_limit,
                  "Bytes the cache may hold (e.g. 10gb); one too small for the shuffle's working "
                  "set reads the widest shuffle that fits, and says so");
  app->add_flag("--strict-cache-limit", o->strict_cache_limit,
                "A --cache-limit too small for the shuffle is an error, not a narrower shuffle");
  app->add_flag("--offline", o->offline,
                "Read the cache's index.json without asking the remote whether it changed");
  app->add_option("--validate-hash", o->validate_hash, "Check downloads with this hash");
  app->add_flag("--no-digest-records", o->no_digest_records,
                "Keep no digest record per downloaded shard (a file from before a reboot then "
                "gets only size and hole checks); to measure what the records cost");
  app->add_flag("--no-store-checksums", o->no_store_checksums,
                "Do not check downloads against the checksum the store sends with them (S3 "
                "x-amz-checksum-* or ETag, GCS x-goog-hash, Azure Content-MD5); to measure what "
                "the check costs");
  app->add_option("--world", o->world, "NODES,RANKS_PER_NODE,WORKERS_PER_RANK")
      ->capture_default_str();
  app->add_option("--rank", o->rank, "Global rank to run (node * ranks_per_node + rank)")
      ->capture_default_str();
  app->add_option("--batch-size", o->batch_size, "Per-worker batch size")->capture_default_str();
  app->add_flag("--json", o->json, "One JSON object per epoch");
  app->add_flag("-q,--quiet", o->quiet, "No progress display");
  app->add_option("--report", o->report,
                  "Write an HTML page of the run: each epoch, and plots of throughput, bytes in "
                  "flight and the cache's fill over time (needs matplotlib)");
  AddMetricsPortOptions(*app, o->metrics_port, o->metrics_host);
  app->add_option("--sample-ids", o->sample_ids,
                  "Write 'EPOCH SAMPLE_ID' lines for every sample this rank read (to check the "
                  "ranks of a world run as separate processes together)");
  app->add_flag("--touch", o->touch,
                "Read every payload byte (a checksum), as a consumer that copies or decodes would; "
                "without it samples are zero-copy views that are never read");
  return {app, [o] { return RunStream(*o); }};
}

}  // namespace ferry::cli
