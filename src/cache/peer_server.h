// PeerServer: a node's cache folders, served read-only over HTTP to the other nodes of its
// cluster, so that each shard crosses the cloud boundary once per cluster (the client side is
// src/storage/peer_store.h; docs/sources.md, "Peer fetch").
//
//   GET /ferry/v1/<dataset>/<basename>   Authorization: Bearer <token>   [Range: bytes=a-b]
//
// <dataset> is PeerDatasetId of the dataset's index.json, and <basename> (percent-encoded) a
// file that index names: a shard's raw file, its compressed file or a companion. Nothing else is
// served - no listing, no path that the index does not name (so no path traversal), nothing
// without the token (401). A file the folder holds whole is sent from it. A raw shard that is
// being downloaded into the folder (by any process of the node) is streamed as its bytes land
// (src/cache/download_progress.h). A raw shard that is neither is fetched first when the dataset
// was registered with a `fetch` (an open dataset: its own download from the remote, which every
// other asker then shares), and otherwise is 404, which sends the asker to the remote. A
// compressed file the folder lacks is fetched the same way when the node keeps it once fetched
// (PeerDataset::keeps_compressed: the owner of it among the peers does), and sent when it is
// whole; else 404.
//
// A download that fails under a reply cuts the reply short (the connection closes before its
// Content-Length): the asker takes the rest from elsewhere. Connections are kept alive between
// requests; at most `max_connections` at once (more are answered 503).
//
// Counters: /ferry/peer/served (requests answered with bytes), /ferry/peer/served_bytes,
// /ferry/peer/refused (requests without the token).
//
// Thread-safety: every method may be called concurrently; connections are served on threads of
// the server's own, all joined by the destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "ferry/format/dataset_description.h"
#include "ferry/result.h"

namespace ferry::internal_cache {

struct PeerDataset {
  std::filesystem::path root;  // its cache folder
  std::shared_ptr<const DatasetDescription> index;
  /// Makes shard k local, not waiting for a download another process runs (ShardCache::
  /// Prepare(k, false)); null: serve only what the folder holds.
  std::function<Status(size_t shard, std::stop_token stop)> fetch;
  /// The compressed files this node keeps once fetched (ShardCacheOptions::keep_zip_of): one of
  /// these is fetched for an asker, and sent once whole. Others are not (they would be gone
  /// again): 404. Null: none.
  std::function<bool(std::string_view basename)> keeps_compressed;
};

struct PeerServerOptions {
  std::string host = "127.0.0.1";  // an IPv4 address; 0.0.0.0 for every interface
  uint16_t port = 0;               // 0: any free one
  std::string token;               // required of every request
  uint32_t max_connections = 64;
  /// A reply whose bytes do not move for this long (its shard's download waits or stalls) is
  /// cut off.
  std::chrono::milliseconds stall{60'000};
  /// A request for a dataset not (yet) served waits this long for it to be registered: the
  /// nodes of a job open their datasets at about the same time, and one that asks first must
  /// not be sent to the remote for it. 0 (a standalone server): 404 at once.
  std::chrono::milliseconds wait_for_dataset{0};
  /// A kept-alive connection that sends no request for this long is closed.
  std::chrono::milliseconds idle{30'000};
};

class PeerServer {
 public:
  /// kInvalidArgument for an empty token; kAlreadyExists when the port is taken.
  static Result<std::unique_ptr<PeerServer>> Start(PeerServerOptions options);
  virtual ~PeerServer() = default;

  virtual uint16_t port() const = 0;

  /// Serving one dataset until it is destroyed (which stops the fetches it started and waits
  /// for the replies that use them).
  class Registration {
   public:
    virtual ~Registration() = default;
  };
  /// Serves `dataset` under `id` (PeerDatasetId) from now on; the latest registration of an id
  /// is the one served.
  virtual std::unique_ptr<Registration> Serve(std::string id, PeerDataset dataset) = 0;
};

/// The datasets under `folder`: the folder itself when it holds index.json, else each of its
/// sub-folders (two levels down: <dataset>/<split>) that does - as `ferry serve-cache` serves
/// them, without a fetch - each with its PeerDatasetId.
Result<std::vector<std::pair<std::string, PeerDataset>>> FindPeerDatasets(
    const std::filesystem::path& folder);

}  // namespace ferry::internal_cache
