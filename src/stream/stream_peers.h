// The cluster cache of a streaming dataset (PeerOptions): who the peers are, and the one peer
// server of this process, which every dataset it opens with peers registers its streams with.
//
// Several processes of a node (the ranks of a job) share its cache folder and name the same
// peer port: the first to listen on it serves the node, and the others rely on it - a
// registration only adds a `fetch` (an open dataset to download a shard with), and every process
// of the node has the same datasets open.
//
// Thread-safety: free functions, safe to call concurrently.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cache/peer_server.h"
#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "ferry/stream/streaming_dataset.h"

namespace ferry::internal_stream {

/// `options` with what the environment gives (FERRY_PEERS, FERRY_PEER_SELF, FERRY_PEER_TOKEN)
/// and the defaults filled in; every field empty when there are no peers. kInvalidArgument for
/// an address that is not host:port, a `self` that is not among them (or none that can be
/// told), or no token.
Result<PeerOptions> ResolvePeers(PeerOptions options);

/// This process's peer server on resolved `options` (self's port), started by the first dataset
/// that asks and shared by the rest; nullptr (logged) when another process of the node listens
/// on the port already.
Result<std::shared_ptr<internal_cache::PeerServer>> ProcessPeerServer(const PeerOptions& options);

/// Whether this node (peers.self) owns the file of that basename among `peers`: the one the
/// others ask for it (RendezvousOrder).
std::function<bool(std::string_view basename)> OwnedByThisNode(const PeerOptions& peers);

/// Makes `remote` (the dataset at `remote_prefix`, cached in `local`) read through the peers
/// named in resolved `peers`, and returns the id its cache folder is served under (that of its
/// index.json); nullopt, leaving `remote` as it is, when the folder has no index.json (a folder
/// of tars that was listed: each node's list is its own).
Result<std::optional<std::string>> ReadThroughPeers(std::shared_ptr<ObjectStore>& remote,
                                                    const std::string& remote_prefix,
                                                    const std::filesystem::path& local,
                                                    const PeerOptions& peers);

}  // namespace ferry::internal_stream
