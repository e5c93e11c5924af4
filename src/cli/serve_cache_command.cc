// `ferry serve-cache`: a node's cache folders, served read-only to the other nodes of its
// cluster (src/cache/peer_server.h) without a training job: each dataset under the folders
// that has an index.json, by the id of that index. It serves what the folders hold, and what a
// process of the node is downloading into them as it lands; a shard neither has is 404, which
// sends the asker to the remote. (A dataset opened with peers serves its own folders, and
// fetches on demand: this command is for a node that only holds a cache.)
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/ascii.h"
#include "base/stoppable_sleep.h"
#include "cache/peer_server.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "storage/env_lookup.h"
#include "storage/peer_store.h"

namespace ferry::cli {
namespace {

struct ServeCacheOptions {
  std::vector<std::string> folders;
  std::string listen = "127.0.0.1:7791";
};

Result<int> RunServeCache(const ServeCacheOptions& o) {
  FERRY_ASSIGN_OR_RETURN(const PeerAddress listen, ParsePeerAddress(o.listen));
  const std::string token = ProcessEnv("FERRY_PEER_TOKEN").value_or("");
  if (token.empty()) {
    return InvalidArgumentError(
        "set FERRY_PEER_TOKEN to the secret the nodes share: the server answers no request "
        "without it");
  }
  FERRY_ASSIGN_OR_RETURN(auto server,
                         internal_cache::PeerServer::Start(
                             {.host = listen.host, .port = listen.port, .token = token}));
  std::vector<std::unique_ptr<internal_cache::PeerServer::Registration>> registrations;
  for (const std::string& folder : o.folders) {
    FERRY_ASSIGN_OR_RETURN(auto datasets, internal_cache::FindPeerDatasets(folder));
    if (datasets.empty()) {
      return NotFoundError(
          fmt::format("{}: no index.json in it or in its sub-folders: not a cache folder", folder));
    }
    for (auto& [id, dataset] : datasets) {
      std::fprintf(stderr, "serving %s (%zu shards) as %s\n", dataset.root.string().c_str(),
                   dataset.index->shards.size(), id.c_str());
      registrations.push_back(server->Serve(id, std::move(dataset)));
    }
  }
  std::fprintf(stderr, "listening on %s:%u; Ctrl+C ends it\n", listen.host.c_str(), server->port());
  InterruptWatch interrupt;
  while (SleepUnlessStopped(std::chrono::seconds(3600), interrupt.token())) {
  }
  return 0;
}

}  // namespace

Command AddServeCacheCommand(CLI::App& parent) {
  auto o = std::make_shared<ServeCacheOptions>();
  CLI::App* app = parent.add_subcommand(
      "serve-cache",
      "Serve cache folders to the other nodes of a cluster (peer fetch), read-only, to "
      "requests that carry FERRY_PEER_TOKEN");
  app->add_option("folder", o->folders,
                  "Cache folders (a dataset's, or one holding datasets' folders)")
      ->required();
  app->add_option("--listen", o->listen,
                  "HOST:PORT to listen on (0.0.0.0 for every interface: the private network)")
      ->capture_default_str();
  return {app, [o] { return RunServeCache(*o); }};
}

}  // namespace ferry::cli
