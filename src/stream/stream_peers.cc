#include "stream/stream_peers.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <thread>
#include <unordered_set>

#include "base/ascii.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/mutex.h"
#include "storage/env_lookup.h"
#include "storage/peer_store.h"

namespace ferry::internal_stream {
namespace {

std::string_view HostOf(std::string_view address) { return address.substr(0, address.rfind(':')); }

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = TrimAsciiWhitespace(text.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

bool IsIpv4(std::string_view host) {
  in_addr addr{};
  return ::inet_pton(AF_INET, std::string(host).c_str(), &addr) == 1;
}

constexpr std::chrono::milliseconds kPeersStartWithin{30'000};

// Whether `address` (host:port) accepts a TCP connection within a second.
bool Listens(const std::string& address) {
  const size_t colon = address.rfind(':');
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints,
                    &found) != 0) {
    return false;
  }
  bool listens = false;
  for (addrinfo* a = found; a != nullptr && !listens; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      listens = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
      int error = 0;
      socklen_t len = sizeof error;
      listens = ::poll(&p, 1, 1000) == 1 &&
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return listens;
}

struct ProcessServers {
  Mutex mu;
  std::map<uint16_t, std::weak_ptr<internal_cache::PeerServer>> servers GUARDED_BY(mu);
  std::map<uint16_t, std::string> tokens GUARDED_BY(mu);
};

ProcessServers& Servers() {
  static auto* servers = new ProcessServers();  // never destroyed: datasets may outlive statics
  return *servers;
}

// Waits (up to kPeersStartWithin) until every other peer accepts connections: the nodes of a job
// start at about the same time, and a read sent to a peer not yet listening would demote it
// and cross the WAN itself.
void AwaitPeers(const PeerOptions& options) {
  const auto deadline = std::chrono::steady_clock::now() + kPeersStartWithin;
  std::vector<std::string> waiting;
  for (const std::string& address : options.addresses) {
    if (address != options.self) waiting.push_back(address);
  }
  while (!waiting.empty() && std::chrono::steady_clock::now() < deadline) {
    std::erase_if(waiting, [](const std::string& address) { return Listens(address); });
    if (!waiting.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!waiting.empty()) {
    Log().warn("peers: {} not listening after {} s; reads they own go to the remote until they are",
               fmt::join(waiting, ", "), kPeersStartWithin.count() / 1000);
  }
}

}  // namespace

Result<PeerOptions> ResolvePeers(PeerOptions options) {
  const auto env = ProcessEnv;
  if (options.addresses.empty()) {
    if (auto listed = env("FERRY_PEERS")) options.addresses = SplitList(*listed);
    if (options.addresses.empty()) return PeerOptions{};
  }
  for (const std::string& address : options.addresses) {
    FERRY_RETURN_IF_ERROR(CheckPeerAddress(address));
  }
  // A node listed twice is one node: kept at its first place, so that every node, however its
  // list repeats, scores the same peers and one of them owns each shard.
  std::unordered_set<std::string> seen;
  std::erase_if(options.addresses,
                [&](const std::string& address) { return !seen.insert(address).second; });
  if (options.self.empty()) {
    if (auto self = env("FERRY_PEER_SELF")) options.self = *self;
  }
  if (options.self.empty()) {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0) {
      std::vector<std::string> mine;
      for (const std::string& address : options.addresses) {
        if (AsciiLower(HostOf(address)) == AsciiLower(name)) mine.push_back(address);
      }
      if (mine.size() == 1) options.self = mine.front();
    }
  }
  if (std::find(options.addresses.begin(), options.addresses.end(), options.self) ==
      options.addresses.end()) {
    return InvalidArgumentError(fmt::format(
        "peers: which of {} is this node? {}; set peer_self (FERRY_PEER_SELF) to its host:port",
        fmt::join(options.addresses, ", "),
        options.self.empty() ? "none of them has this machine's hostname"
                             : fmt::format("{} is not among them", options.self)));
  }
  if (options.token.empty()) {
    if (auto token = env("FERRY_PEER_TOKEN")) options.token = *token;
  }
  if (options.token.empty()) {
    return InvalidArgumentError(
        "peers: no token; set FERRY_PEER_TOKEN to one secret that every node of the job shares "
        "(the peer servers answer no request without it)");
  }
  if (options.listen_host.empty()) {
    const std::string_view host = HostOf(options.self);
    options.listen_host = IsIpv4(host) ? std::string(host) : "0.0.0.0";
  }
  return options;
}

Result<std::shared_ptr<internal_cache::PeerServer>> ProcessPeerServer(const PeerOptions& options) {
  FERRY_ASSIGN_OR_RETURN(const PeerAddress self, ParsePeerAddress(options.self));
  const uint16_t port = self.port;
  std::shared_ptr<internal_cache::PeerServer> server;
  {
    ProcessServers& s = Servers();
    MutexLock lock(s.mu);
    if (auto running = s.servers[port].lock()) {
      if (s.tokens[port] != options.token) {
        return InvalidArgumentError(
            fmt::format("peers: this process serves port {} with another token already", port));
      }
      return running;
    }
    auto started = internal_cache::PeerServer::Start({.host = options.listen_host,
                                                      .port = port,
                                                      .token = options.token,
                                                      .wait_for_dataset = kPeersStartWithin});
    if (!started.ok()) {
      if (started.status().code() != StatusCode::kAlreadyExists) return started.status();
      Log().info("peers: {}:{} is served by another process of this node", options.listen_host,
                 port);
      return std::shared_ptr<internal_cache::PeerServer>();
    }
    server = std::move(*started);
    s.servers[port] = server;
    s.tokens[port] = options.token;
  }
  Log().info("peers: serving this node's cache at {}:{} to {} peers", options.listen_host, port,
             options.addresses.size() - 1);
  AwaitPeers(options);
  return server;
}

std::function<bool(std::string_view basename)> OwnedByThisNode(const PeerOptions& peers) {
  const auto self = std::find(peers.addresses.begin(), peers.addresses.end(), peers.self);
  const size_t index = static_cast<size_t>(self - peers.addresses.begin());
  return [addresses = peers.addresses, index](std::string_view basename) {
    return RendezvousOwner(addresses, basename) == index;
  };
}

Result<std::optional<std::string>> ReadThroughPeers(std::shared_ptr<ObjectStore>& remote,
                                                    const std::string& remote_prefix,
                                                    const std::filesystem::path& local,
                                                    const PeerOptions& peers) {
  const std::filesystem::path index = local / "index.json";
  if (!IsRegularFile(index)) {
    Log().info("peers: {} has no index.json; its shards are fetched by each node", local.string());
    return std::optional<std::string>();
  }
  FERRY_ASSIGN_OR_RETURN(const std::string bytes, ReadFileToString(index));
  std::string id = PeerDatasetId(bytes);
  FERRY_ASSIGN_OR_RETURN(
      remote,
      MakePeerFetchStore(
          remote, remote_prefix,
          {.peers = peers.addresses, .self = peers.self, .token = peers.token, .dataset = id}));
  return std::optional<std::string>(std::move(id));
}

}  // namespace ferry::internal_stream
