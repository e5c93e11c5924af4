// ferry-wan: the WAN emulator (wan_proxy.h) as a command.
//   ferry-wan --target 127.0.0.1:9000 --delay-ms 50 [--listen PORT] [--conn-mbps 25]
//             [--total-mbps 1000] [--max-conns 64] [--port-file F]
//             [--fault-rate 0.2
//              --fault-kinds truncate,reset,stall,flip,slow,refuse,http503,busy,http500,
//                            short,range,whole,html,etag
//              --fault-seed 7 --fault-max-offset BYTES --fault-stall-ms 1000
//              --fault-slow-bps 1024]
//             [--throttle-rps 20 --throttle-reply s3|azure|gcs --throttle-retry-after 1
//              --throttle-burst-s 5 --throttle-every-s 30]
// Prints "listening on 127.0.0.1:PORT" (and writes PORT to --port-file), runs until SIGINT or
// SIGTERM, then prints what went through as one JSON line.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/wan/wan_proxy.h"

int main(int argc, char** argv) {
  CLI::App app{"TCP proxy that adds delay and bandwidth limits (a WAN on loopback)"};
  std::string target, port_file;
  double delay_ms = 0, conn_mbps = 0, total_mbps = 0;
  uint32_t max_conns = 0;
  uint16_t listen = 0;
  app.add_option("--target", target, "HOST:PORT to forward to")->required();
  app.add_option("--delay-ms", delay_ms, "One-way delay in each direction (RTT = 2 x delay)");
  app.add_option("--listen", listen, "Port on 127.0.0.1 (0: any)");
  app.add_option("--conn-mbps", conn_mbps, "Bandwidth cap per connection, MB/s (0: none)");
  app.add_option("--total-mbps", total_mbps, "Bandwidth cap in total, MB/s (0: none)");
  app.add_option("--max-conns", max_conns, "Concurrent connections (0: any)");
  app.add_option("--port-file", port_file, "Write the listening port here");
  double fault_rate = 0;
  std::vector<std::string> fault_kinds;
  uint64_t fault_seed = 1, fault_max_offset = uint64_t{1} << 20;
  int64_t fault_stall_ms = 1000;
  double fault_slow_bps = 1024;
  app.add_option("--fault-rate", fault_rate,
                 "Fraction of connections given a body fault (truncate, reset, stall, flip, "
                 "slow) and "
                 "of requests given a request fault (refuse, http503, busy, http500) or a lie "
                 "(short, range, whole, html, etag)");
  app.add_option("--fault-kinds", fault_kinds,
                 "truncate, reset, stall, flip, slow, refuse, http503, busy, http500, and the "
                 "lies short, range, whole, html, etag")
      ->delimiter(',');
  app.add_option("--fault-seed", fault_seed, "Seed of the fault schedule");
  app.add_option("--fault-max-offset", fault_max_offset,
                 "A fault fires within this many bytes to the client");
  app.add_option("--fault-stall-ms", fault_stall_ms, "How long a stall lasts");
  double throttle_rps = 0;
  std::string throttle_reply = "s3";
  uint32_t throttle_retry_after = 1;
  app.add_option("--throttle-rps", throttle_rps,
                 "Answer requests beyond this rate as a throttled service does (0: none)");
  app.add_option("--throttle-reply", throttle_reply,
                 "s3 (503 SlowDown), azure (503 ServerBusy) or gcs (429)")
      ->check(CLI::IsMember({"s3", "azure", "gcs"}));
  app.add_option("--throttle-retry-after", throttle_retry_after,
                 "Retry-After seconds in a throttle reply (0: none)");
  double throttle_burst_s = 0, throttle_every_s = 0;
  app.add_option("--throttle-burst-s", throttle_burst_s,
                 "Throttle only for this many seconds of every --throttle-every-s");
  app.add_option("--throttle-every-s", throttle_every_s,
                 "The period of throttling bursts (0: throttle all the time)");
  app.add_option("--fault-slow-bps", fault_slow_bps,
                 "Bytes per second a slowed connection trickles at");
  CLI11_PARSE(app, argc, argv);

  if (throttle_every_s > 0 && throttle_burst_s <= 0) {
    std::fprintf(stderr, "ferry-wan: --throttle-every-s needs --throttle-burst-s\n");
    return 2;
  }

  ferry::wan::WanOptions options;
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "ferry-wan: --target must be HOST:PORT\n");
    return 2;
  }
  options.target_host = target.substr(0, colon);
  options.target_port = static_cast<uint16_t>(std::stoi(target.substr(colon + 1)));
  options.listen_port = listen;
  options.one_way_delay = std::chrono::microseconds(static_cast<int64_t>(delay_ms * 1000));
  options.per_connection_bytes_per_s = conn_mbps * 1e6;
  options.total_bytes_per_s = total_mbps * 1e6;
  options.max_connections = max_conns;
  options.faults.rate = fault_rate;
  options.faults.seed = fault_seed;
  options.faults.max_offset = fault_max_offset;
  options.faults.stall = std::chrono::milliseconds(fault_stall_ms);
  options.faults.slow_bytes_per_s = fault_slow_bps;
  options.throttle = {.requests_per_s = throttle_rps,
                      .reply = throttle_reply,
                      .retry_after_s = throttle_retry_after,
                      .burst_s = throttle_burst_s,
                      .every_s = throttle_every_s};
  for (const std::string& name : fault_kinds) {
    auto kind = ferry::wan::ParseFaultKind(name);
    if (!kind) {
      std::fprintf(stderr, "ferry-wan: %s\n", kind.status().message().c_str());
      return 2;
    }
    options.faults.kinds.push_back(*kind);
  }

  // Block the signals before any thread starts, then wait for one.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto proxy = ferry::wan::WanProxy::Start(options);
  if (!proxy) {
    std::fprintf(stderr, "ferry-wan: %s\n", proxy.status().ToString().c_str());
    return 1;
  }
  std::printf("listening on 127.0.0.1:%u -> %s, delay %.1f ms each way\n", (*proxy)->port(),
              target.c_str(), delay_ms);
  std::fflush(stdout);
  if (!port_file.empty()) std::ofstream(port_file) << (*proxy)->port() << "\n";
  int sig = 0;
  sigwait(&signals, &sig);
  const auto stats = (*proxy)->Stats();
  (*proxy)->Stop();
  std::string faults;
  for (int k = 0; k < ferry::wan::kFaultKinds; ++k) {
    faults += fmt::format("{}\"{}\": {}", k ? ", " : "",
                          ferry::wan::FaultKindName(static_cast<ferry::wan::FaultKind>(k)),
                          stats.faults[k]);
  }
  std::printf(R"({"connections": %llu, "requests": %llu, "bytes_to_server": %llu, )"
              R"("bytes_to_client": %llu, "body_bytes_to_client": %llu, "faults": {%s}})"
              "\n",
              static_cast<unsigned long long>(stats.connections),
              static_cast<unsigned long long>(stats.requests),
              static_cast<unsigned long long>(stats.bytes_to_server),
              static_cast<unsigned long long>(stats.bytes_to_client),
              static_cast<unsigned long long>(stats.body_bytes_to_client), faults.c_str());
  return 0;
}
