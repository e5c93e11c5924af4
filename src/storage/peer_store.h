// PeerFetchStore: a dataset's remote, read through the cache folders of the other nodes of a
// cluster first, so that each shard crosses the cloud boundary once per cluster rather than once
// per node (docs/sources.md, "Peer fetch").
//
// Every node runs a peer server (src/cache/peer_server.h) over its cache folder. Each shard has
// one owner among the nodes, the same on every node: the first in RendezvousOrder of its name
// (highest random weight hashing, so that a node joining or leaving moves only its own share).
// A read of a shard this node owns goes to the remote; a read of another's goes to its owner,
// which serves it from its cache folder - fetching it from the remote first, once, and
// streaming it to every node that asks while it downloads. A peer that fails (refused, a
// timeout, a body that breaks off) is demoted (src/storage/source_health.h) and the read goes
// on from the byte it reached - from the next owner in rendezvous order that is not demoted, or
// from the remote when that is this node. A peer that answers 404 (a standalone server without
// the shard) passes it on without being demoted.
//
// Peers authenticate each request with a token shared by the nodes (Authorization: Bearer),
// and a peer is asked only for files the dataset's index.json names, by an id of that index's
// bytes (PeerDatasetId): a node whose copy of the dataset differs has no file under that id.
// As with mirrors, reads report no etag or time: a shard whose bytes came from a peer and the
// remote is still one object.
//
// Counters:
//   /ferry/peer/bytes_read  bytes that peers delivered
//   /ferry/peer/reads       reads that went to a peer
//   /ferry/peer/failovers   reads a peer failed that the remote (or another peer) took over
//   /ferry/peer/missing     reads of shards a peer did not have (404)
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "storage/source_health.h"

namespace ferry {

namespace http {
class Transport;
}

/// The path under which a peer server serves `basename` of the dataset `dataset`.
std::string PeerPath(std::string_view dataset, std::string_view basename);
inline constexpr std::string_view kPeerPathPrefix = "/ferry/v1/";

/// The id of a dataset whose index.json has the bytes `index_json`.
std::string PeerDatasetId(std::string_view index_json);

/// The positions of `peers` in the order they own `name`: the first is its owner, the second
/// takes over when the owner is down. The same on every node that lists the same peers, in any
/// order.
std::vector<size_t> RendezvousOrder(const std::vector<std::string>& peers, std::string_view name);
/// RendezvousOrder(peers, name).front() without the sort: a scan, for the questions asked per
/// shard ("does this node own it?"). `peers` is not empty.
size_t RendezvousOwner(const std::vector<std::string>& peers, std::string_view name);

struct PeerAddress {
  std::string host;
  uint16_t port = 0;
};

/// `address`, "host:port" with a port of 1 to 65535, split; kInvalidArgument for anything else.
Result<PeerAddress> ParsePeerAddress(std::string_view address);

/// kInvalidArgument unless `address` is "host:port" with a port of 1 to 65535.
inline Status CheckPeerAddress(std::string_view address) {
  return ParsePeerAddress(address).status();
}

struct PeerFetchOptions {
  std::vector<std::string> peers;  // "host:port" of every node's peer server, this node's too
  std::string self;                // which of `peers` is this node
  std::string token;               // shared by the nodes; sent as a bearer token
  std::string dataset;             // PeerDatasetId of the dataset's index.json
  DemotionOptions demotion;
  /// A peer that does not accept a connection in this time is down.
  uint32_t connect_timeout_ms = 2000;
};

/// `remote` (keys under `remote_prefix` are the dataset's files), read through the peers.
/// kInvalidArgument for an address that is not host:port, a `self` not among the peers, or an
/// empty token.
Result<std::shared_ptr<ObjectStore>> MakePeerFetchStore(
    std::shared_ptr<ObjectStore> remote, std::string remote_prefix, PeerFetchOptions options,
    std::shared_ptr<http::Transport> transport = nullptr);

}  // namespace ferry
