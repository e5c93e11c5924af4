#include "storage/peer_store.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "base/ascii.h"
#include "base/log.h"
#include "ferry/metrics/metrics.h"
#include "storage/http/resumable_get.h"
#include "storage/http/transport.h"
#include "storage/http/url_encoding.h"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

struct PeerCounters {
  metrics::Counter& bytes_read = metrics::GetCounter("/ferry/peer/bytes_read");
  metrics::Counter& reads = metrics::GetCounter("/ferry/peer/reads");
  metrics::Counter& failovers = metrics::GetCounter("/ferry/peer/failovers");
  metrics::Counter& missing = metrics::GetCounter("/ferry/peer/missing");
};

PeerCounters& Counters() {
  static PeerCounters counters;
  return counters;
}

class PeerFetchStore final : public ObjectStore {
 public:
  PeerFetchStore(std::shared_ptr<ObjectStore> remote, std::string remote_prefix,
                 PeerFetchOptions options, std::shared_ptr<http::Transport> transport, size_t self)
      : remote_(std::move(remote)),
        prefix_(std::move(remote_prefix)),
        options_(std::move(options)),
        transport_(std::move(transport)),
        self_(self),
        health_(options_.peers.size(), options_.demotion) {}

  std::string_view scheme() const override { return remote_->scheme(); }
  bool read_only() const override { return true; }
  std::string ToUrl(std::string_view key) const override { return remote_->ToUrl(key); }
  Result<ObjectInfo> Head(std::string_view key) override { return remote_->Head(key); }
  Status Write(std::string_view key, const ByteSource&) override {
    return FailedPreconditionError(
        fmt::format("{}: a dataset read through peers is read-only", ToUrl(key)));
  }
  Status Remove(std::string_view key) override { return Write(key, ByteSource{}); }
  Result<ListResult> List(std::string_view prefix, bool recursive) override {
    return remote_->List(prefix, recursive);
  }

  Result<ObjectInfo> Read(std::string_view key, ByteRange range, const ByteSink& sink) override {
    if (!key.starts_with(prefix_) || key.size() == prefix_.size()) {
      return remote_->Read(key, range, sink);
    }
    const std::string_view basename = key.substr(prefix_.size());
    uint64_t delivered = 0;
    bool caller_stopped = false;
    const ByteSink counted = [&](std::string_view chunk) {
      Status status = sink(chunk);
      if (!status.ok()) {
        caller_stopped = true;  // the caller's word, not the source's fault
        return status;
      }
      delivered += chunk.size();
      return status;
    };
    auto rest = [&] {
      return ByteRange{
          .offset = range.offset + delivered,
          .length = range.length ? std::optional(*range.length - delivered) : std::nullopt};
    };
    const std::vector<size_t> order = RendezvousOrder(options_.peers, basename);
    bool several = false;  // bytes of this read came from more than one place
    for (size_t peer : order) {
      if (peer == self_) break;  // this node owns it (the peers before it are down): the remote
      if (health_.Demoted(peer)) continue;
      const uint64_t before = delivered;
      const Clock::time_point started = Clock::now();
      Counters().reads.Add();
      auto got = ReadFromPeer(peer, basename, rest(), counted);
      Counters().bytes_read.Add(delivered - before);
      if (before > 0 && delivered > before) several = true;
      if (got) {
        health_.Succeeded(peer, started);
        got->key = std::string(key);
        if (several) got->source = kSeveralSources;
        return got;
      }
      const Status& status = got.status();
      if (caller_stopped || status.code() == StatusCode::kCancelled) return status;
      if (status.code() == StatusCode::kNotFound) {
        Counters().missing.Add();
        continue;
      }
      const auto demoted = health_.Demote(peer);
      Counters().failovers.Add();
      Log().warn("peers: {} failed: {}; going on without it ({} is passed over for {:.1f} s)",
                 PeerUrl(peer, basename), status.message(), options_.peers[peer],
                 demoted.count() / 1000.0);
    }
    // Failed after the last byte: what is left to learn is the object's size.
    if (delivered > 0 && range.length && delivered == *range.length) {
      auto info = remote_->Head(key);
      if (info) Unversioned(*info);
      return info;
    }
    auto got = remote_->Read(key, rest(), delivered > 0 ? counted : sink);
    if (!got) return got;
    Unversioned(*got);
    if (delivered > 0) {
      got->source = kSeveralSources;
      got->checksum = {};
    }
    return got;
  }

 private:
  // A peer's copy has no etag of its own, and a shard of a peer's bytes and the remote's is
  // one object (ObjectVersion).
  static void Unversioned(ObjectInfo& info) {
    info.etag.clear();
    info.mtime.reset();
  }

  std::string PeerUrl(size_t peer, std::string_view basename) const {
    return "http://" + options_.peers[peer] + PeerPath(options_.dataset, basename);
  }

  Result<ObjectInfo> ReadFromPeer(size_t peer, std::string_view basename, ByteRange range,
                                  const ByteSink& sink) {
    const std::string url = PeerUrl(peer, basename);
    http::ResumableGetOptions get;
    get.url = url;
    // The remote (or the next peer) is the retry: a peer that fails is passed over at once.
    get.retry.max_attempts = 1;
    get.build = [&](const http::GetAttempt&, http::Headers headers) -> Result<http::Request> {
      http::Request request;
      request.url = url;
      request.headers = std::move(headers);
      request.headers.Set("Authorization", "Bearer " + options_.token);
      request.timeouts.connect_ms = options_.connect_timeout_ms;
      return request;
    };
    get.map_error = [&](const http::Response& response) {
      return http::StatusFromHttp(response.status, url, "from a peer");
    };
    auto info = http::ResumableGet(*transport_, get, range, sink);
    if (!info) return info;
    Unversioned(*info);
    info->source = "peer";
    info->checksum = {};
    return info;
  }

  const std::shared_ptr<ObjectStore> remote_;
  const std::string prefix_;
  const PeerFetchOptions options_;
  const std::shared_ptr<http::Transport> transport_;
  const size_t self_;
  SourceHealth health_;
};

}  // namespace

std::string PeerPath(std::string_view dataset, std::string_view basename) {
  return fmt::format("{}{}/{}", kPeerPathPrefix, dataset, http::PercentEncode(basename, true));
}

std::string PeerDatasetId(std::string_view index_json) {
  return fmt::format("{:016x}", XXH3_64bits(index_json.data(), index_json.size()));
}

namespace {

// Ties (only of equal addresses) fall to the address, then the position: the same order on every
// node.
struct PeerScore {
  uint64_t score;
  size_t position;
};

PeerScore ScoreOf(const std::vector<std::string>& peers, size_t i, uint64_t seed) {
  return {XXH3_64bits_withSeed(peers[i].data(), peers[i].size(), seed), i};
}

bool OwnsBefore(const std::vector<std::string>& peers, const PeerScore& a, const PeerScore& b) {
  if (a.score != b.score) return a.score > b.score;
  if (peers[a.position] != peers[b.position]) return peers[a.position] < peers[b.position];
  return a.position < b.position;
}

uint64_t NameSeed(std::string_view name) { return XXH3_64bits(name.data(), name.size()); }

}  // namespace

std::vector<size_t> RendezvousOrder(const std::vector<std::string>& peers, std::string_view name) {
  const uint64_t seed = NameSeed(name);
  std::vector<PeerScore> scored;
  scored.reserve(peers.size());
  for (size_t i = 0; i < peers.size(); ++i) scored.push_back(ScoreOf(peers, i, seed));
  std::sort(scored.begin(), scored.end(),
            [&](const PeerScore& a, const PeerScore& b) { return OwnsBefore(peers, a, b); });
  std::vector<size_t> order;
  order.reserve(scored.size());
  for (const PeerScore& s : scored) order.push_back(s.position);
  return order;
}

size_t RendezvousOwner(const std::vector<std::string>& peers, std::string_view name) {
  const uint64_t seed = NameSeed(name);
  PeerScore best = ScoreOf(peers, 0, seed);
  for (size_t i = 1; i < peers.size(); ++i) {
    const PeerScore s = ScoreOf(peers, i, seed);
    if (OwnsBefore(peers, s, best)) best = s;
  }
  return best.position;
}

Result<PeerAddress> ParsePeerAddress(std::string_view address) {
  const size_t colon = address.rfind(':');
  const auto port =
      colon == std::string_view::npos ? std::nullopt : ParseUint(address.substr(colon + 1));
  if (colon == 0 || !port || *port == 0 || *port > 65535 ||
      address.find_first_of("/ ?#@") != std::string_view::npos) {
    return InvalidArgumentError(
        fmt::format("peer {:?} is not host:port (a node's peer server, e.g. node3:7791)",
                    std::string(address)));
  }
  return PeerAddress{.host = std::string(address.substr(0, colon)),
                     .port = static_cast<uint16_t>(*port)};
}

Result<std::shared_ptr<ObjectStore>> MakePeerFetchStore(
    std::shared_ptr<ObjectStore> remote, std::string remote_prefix, PeerFetchOptions options,
    std::shared_ptr<http::Transport> transport) {
  if (!remote)
    return InvalidArgumentError("peers: a dataset without a remote has nothing to share");
  for (const std::string& peer : options.peers) FERRY_RETURN_IF_ERROR(CheckPeerAddress(peer));
  const auto self = std::find(options.peers.begin(), options.peers.end(), options.self);
  if (self == options.peers.end()) {
    return InvalidArgumentError(
        fmt::format("peers: this node ({}) is not among the peers ({}); say which one it is",
                    options.self.empty() ? "unset" : options.self, fmt::join(options.peers, ", ")));
  }
  if (options.token.empty()) {
    return InvalidArgumentError(
        "peers: no token: the nodes must share one (FERRY_PEER_TOKEN) that their peer servers "
        "ask of every request");
  }
  if (!transport) transport = http::DefaultTransport();
  const size_t self_index = static_cast<size_t>(self - options.peers.begin());
  return std::shared_ptr<ObjectStore>(
      std::make_shared<PeerFetchStore>(std::move(remote), std::move(remote_prefix),
                                       std::move(options), std::move(transport), self_index));
}

}  // namespace ferry
