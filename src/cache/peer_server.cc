#include "cache/peer_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/ascii.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/tcp_listener.h"
#include "cache/cache_layout.h"
#include "cache/download_progress.h"
#include "ferry/cache/shard_cache.h"
#include "ferry/metrics/metrics.h"
#include "storage/http/url_encoding.h"
#include "storage/peer_store.h"

namespace ferry::internal_cache {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kChunk = uint64_t{1} << 20;

struct ServerCounters {
  metrics::Counter& served = metrics::GetCounter("/ferry/peer/served");
  metrics::Counter& served_bytes = metrics::GetCounter("/ferry/peer/served_bytes");
  metrics::Counter& refused = metrics::GetCounter("/ferry/peer/refused");
};

ServerCounters& Counters() {
  static ServerCounters counters;
  return counters;
}

// A file the index names, as the server finds it by name.
struct NamedFile {
  size_t shard = 0;
  uint64_t bytes = 0;
  bool raw = false;  // the shard's raw file: the one a download in progress can be streamed from
};

// One registration of a dataset, shared by the replies that use it.
struct Served {
  PeerDataset dataset;
  CacheLayout layout;
  std::unordered_map<std::string, NamedFile> files;
  std::stop_source stop;  // ends the fetches it started, when it is forgotten
};

std::shared_ptr<Served> MakeServed(PeerDataset dataset) {
  auto served = std::make_shared<Served>(Served{
      .dataset = std::move(dataset), .layout = CacheLayout(fs::path()), .files = {}, .stop = {}});
  served->layout = CacheLayout(served->dataset.root);
  const auto& shards = served->dataset.index->shards;
  for (size_t k = 0; k < shards.size(); ++k) {
    const ShardDescription& shard = shards[k];
    served->files[shard.raw_data.basename] = {
        .shard = k, .bytes = shard.raw_data.bytes, .raw = true};
    if (shard.zip_data) served->files[shard.zip_data->basename] = {k, shard.zip_data->bytes, false};
    for (const CompanionFile& companion : shard.companions) {
      served->files[companion.raw.basename] = {k, companion.raw.bytes, false};
      if (companion.zip) served->files[companion.zip->basename] = {k, companion.zip->bytes, false};
    }
  }
  return served;
}

struct Request {
  std::string method;
  std::string path;
  std::string authorization;
  std::string range;
  bool keep_alive = true;
};

std::optional<Request> ParseHead(std::string_view head) {
  const size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const size_t a = line.find(' ');
  const size_t b = line.rfind(' ');
  if (a == std::string_view::npos || b <= a) return std::nullopt;
  Request request{.method = std::string(line.substr(0, a)),
                  .path = std::string(line.substr(a + 1, b - a - 1))};
  const std::string_view version = line.substr(b + 1);
  if (!version.starts_with("HTTP/1.")) return std::nullopt;
  request.keep_alive = version == "HTTP/1.1";
  size_t at = line_end + 2;
  while (at < head.size()) {
    const size_t end = head.find("\r\n", at);
    if (end == std::string_view::npos || end == at) break;
    const std::string_view field = head.substr(at, end - at);
    at = end + 2;
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name = AsciiLower(field.substr(0, colon));
    const std::string_view value = TrimAsciiWhitespace(field.substr(colon + 1));
    if (name == "authorization") request.authorization = std::string(value);
    if (name == "range") request.range = std::string(value);
    if (name == "connection") {
      const std::string v = AsciiLower(value);
      if (v == "close") request.keep_alive = false;
      if (v == "keep-alive") request.keep_alive = true;
    }
  }
  return request;
}

// "bytes=a-b" / "bytes=a-" of an object of `size` bytes -> [begin, end); nullopt when it cannot
// be served (suffix ranges and lists are not asked for by ferry).
std::optional<std::pair<uint64_t, uint64_t>> ParseRange(std::string_view range, uint64_t size) {
  if (!range.starts_with("bytes=")) return std::nullopt;
  range.remove_prefix(6);
  const size_t dash = range.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto first = ParseUint(range.substr(0, dash));
  if (!first || *first >= size) return std::nullopt;
  const std::string_view last_text = range.substr(dash + 1);
  if (last_text.empty()) return std::pair{*first, size};
  const auto last = ParseUint(last_text);
  if (!last || *last < *first) return std::nullopt;
  return std::pair{*first, std::min(size, *last + 1)};
}

std::string Reply(int status, std::string_view reason, std::string_view body,
                  std::string_view extra = "") {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n{}\r\n{}",
      status, reason, body.size(), extra, body);
}

class SocketPeerServer final : public PeerServer {
 public:
  SocketPeerServer(std::unique_ptr<TcpListener> listener, PeerServerOptions options)
      : listener_(std::move(listener)),
        options_(std::move(options)),
        expected_authorization_("Bearer " + options_.token) {
    thread_ = std::jthread([this](std::stop_token stop) { AcceptLoop(stop); });
  }

  ~SocketPeerServer() override {
    thread_.request_stop();
    thread_.join();
    std::list<Connection> connections;
    {
      MutexLock lock(mu_);
      for (Connection& c : connections_) {
        c.thread.request_stop();
        ::shutdown(c.fd, SHUT_RDWR);  // wakes a thread waiting for a request or sending
      }
      connections.swap(connections_);
    }
    Close(connections);
  }

  uint16_t port() const override { return listener_->port(); }

  std::unique_ptr<Registration> Serve(std::string id, PeerDataset dataset) override {
    auto served = MakeServed(std::move(dataset));
    {
      MutexLock lock(mu_);
      datasets_[id].push_back(served);
    }
    return std::make_unique<ServedRegistration>(this, std::move(id), std::move(served));
  }

 private:
  // Its thread does not close `fd`: the server does, once it has joined the thread, so that a
  // shutdown() never reaches a number reused by another file.
  struct Connection {
    int fd = -1;
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };

  static void Close(std::list<Connection>& connections) {
    for (Connection& c : connections) {
      c.thread.join();
      ::close(c.fd);
    }
    connections.clear();
  }

  class ServedRegistration final : public Registration {
   public:
    ServedRegistration(SocketPeerServer* server, std::string id, std::shared_ptr<Served> served)
        : server_(server), id_(std::move(id)), served_(std::move(served)) {}
    ~ServedRegistration() override { server_->Forget(id_, std::move(served_)); }

   private:
    SocketPeerServer* server_;
    std::string id_;
    std::shared_ptr<Served> served_;
  };

  void Forget(const std::string& id, std::shared_ptr<Served> served) {
    {
      MutexLock lock(mu_);
      auto it = datasets_.find(id);
      if (it != datasets_.end()) {
        std::erase(it->second, served);
        if (it->second.empty()) datasets_.erase(it);
      }
    }
    served->stop.request_stop();
    // The replies that use it hold it; their fetches stop now, and they end soon after.
    while (served.use_count() > 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  std::shared_ptr<Served> Find(const std::string& id) {
    MutexLock lock(mu_);
    auto it = datasets_.find(id);
    return it == datasets_.end() ? nullptr : it->second.back();
  }

  void AcceptLoop(std::stop_token stop) {
    while (!stop.stop_requested()) {
      const int client = listener_->Accept(std::chrono::milliseconds(200));
      Reap();
      if (client < 0) continue;
      MutexLock lock(mu_);
      if (connections_.size() >= options_.max_connections) {
        SendAll(client, Reply(503, "Service Unavailable", "busy: too many connections\n",
                              "Connection: close\r\nRetry-After: 1\r\n"));
        ::close(client);
        continue;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      Connection& c = connections_.emplace_back();
      c.fd = client;
      c.done = done;
      c.thread = std::jthread([this, client, done](std::stop_token s) {
        ServeConnection(client, s);
        done->store(true);
      });
    }
  }

  void Reap() {
    std::list<Connection> finished;
    {
      MutexLock lock(mu_);
      for (auto it = connections_.begin(); it != connections_.end();) {
        if (it->done->load()) {
          auto next = std::next(it);
          finished.splice(finished.end(), connections_, it);
          it = next;
        } else {
          ++it;
        }
      }
    }
    Close(finished);  // outside the lock
  }

  void ServeConnection(int fd, std::stop_token stop) {
    std::string buffer;
    while (!stop.stop_requested()) {
      if (!ReceiveHttpHead(fd, buffer, Clock::now() + options_.idle)) return;
      const size_t head_end = buffer.find("\r\n\r\n") + 4;
      const std::string head = buffer.substr(0, head_end);
      buffer.erase(0, head_end);  // requests without bodies: what follows is the next request
      const std::optional<Request> request = ParseHead(head);
      if (!request) {
        SendAll(fd,
                Reply(400, "Bad Request", "not an HTTP/1.x request\n", "Connection: close\r\n"));
        return;
      }
      if (!Answer(fd, *request, stop) || !request->keep_alive) return;
    }
  }

  // False when the connection must close (a reply cut short, or a peer gone).
  bool Answer(int fd, const Request& request, std::stop_token stop) {
    if (request.method != "GET" && request.method != "HEAD") {
      return SendAll(
          fd, Reply(405, "Method Not Allowed", "only GET and HEAD\n", "Allow: GET, HEAD\r\n"));
    }
    // Compared in constant time: how long a refusal takes must not spell out the token.
    if (request.authorization.size() != expected_authorization_.size() ||
        CRYPTO_memcmp(request.authorization.data(), expected_authorization_.data(),
                      expected_authorization_.size()) != 0) {
      Counters().refused.Add();
      return SendAll(fd, Reply(401, "Unauthorized", "a peer token is required\n",
                               "WWW-Authenticate: Bearer realm=\"ferry\"\r\n"));
    }
    const std::string_view path = request.path;
    const size_t slash = path.starts_with(kPeerPathPrefix) ? path.find('/', kPeerPathPrefix.size())
                                                           : std::string_view::npos;
    if (slash == std::string_view::npos || path.find('?') != std::string_view::npos) {
      return SendAll(fd, Reply(404, "Not Found", "not a peer path\n"));
    }
    const std::string id(path.substr(kPeerPathPrefix.size(), slash - kPeerPathPrefix.size()));
    const std::string basename = http::PercentDecode(path.substr(slash + 1));
    std::shared_ptr<Served> served = Find(id);
    for (const auto until = Clock::now() + options_.wait_for_dataset;
         !served && Clock::now() < until && !stop.stop_requested();) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      served = Find(id);
    }
    const auto named = served ? served->files.find(basename)
                              : std::unordered_map<std::string, NamedFile>::const_iterator();
    if (!served || named == served->files.end()) {
      return SendAll(fd, Reply(404, "Not Found", "no such dataset file here\n"));
    }
    const NamedFile file = named->second;
    uint64_t begin = 0;
    uint64_t end = file.bytes;
    if (!request.range.empty()) {
      const auto range = ParseRange(request.range, file.bytes);
      if (!range) {
        return SendAll(fd, Reply(416, "Range Not Satisfiable", "",
                                 fmt::format("Content-Range: bytes */{}\r\n", file.bytes)));
      }
      std::tie(begin, end) = *range;
    }
    const fs::path whole = served->layout.FilePath(basename);
    bool have = IsRegularFile(whole);
    if (!have && !file.raw && served->dataset.fetch && served->dataset.keeps_compressed &&
        served->dataset.keeps_compressed(basename)) {
      have = FetchWhole(*served, file, whole, stop);
    }
    const bool can_fetch = file.raw && served->dataset.fetch;
    if (!have && !can_fetch && !(file.raw && Landing(*served, basename))) {
      return SendAll(fd, Reply(404, "Not Found", "not in this node's cache\n"));
    }
    std::string head = request.range.empty()
                           ? fmt::format("HTTP/1.1 200 OK\r\n")
                           : fmt::format(
                                 "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
                                 "{}-{}/{}\r\n",
                                 begin, end - 1, file.bytes);
    head += fmt::format(
        "Content-Type: application/octet-stream\r\nContent-Length: {}\r\nAccept-Ranges: "
        "bytes\r\n\r\n",
        end - begin);
    if (!SendAll(fd, head)) return false;
    if (request.method == "HEAD") return true;
    Counters().served.Add();
    return SendBody(fd, *served, basename, file, begin, end, stop);
  }

  // Fetches the shard of `file`, a file that is published whole (a compressed form this node
  // keeps), and waits for it; false when it does not come within `stall`, or the shard turns out
  // local without it (cached before this node kept such files).
  bool FetchWhole(Served& served, const NamedFile& file, const fs::path& whole,
                  std::stop_token stop) {
    const fs::path raw =
        served.layout.FilePath(served.dataset.index->shards[file.shard].raw_data.basename);
    for (const auto until = Clock::now() + options_.stall;
         Clock::now() < until && !stop.stop_requested() && !served.stop.stop_requested();) {
      if (IsRegularFile(whole)) return true;
      const Status status = served.dataset.fetch(file.shard, served.stop.get_token());
      if (!status.ok()) {
        Log().info("peers: fetching shard {} of {} for a peer failed: {}", file.shard,
                   served.layout.root().string(), status.message());
        return false;
      }
      // The compressed file is published before the raw one.
      if (IsRegularFile(whole)) return true;
      if (IsRegularFile(raw)) return false;
      // Another process downloads it.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return IsRegularFile(whole);
  }

  static std::optional<std::unique_ptr<DownloadProgressReader>> Landing(
      const Served& served, const std::string& basename) {
    auto landing = DownloadProgressReader::Open(served.layout.ProgressPath(basename),
                                                served.layout.TemporaryPath(basename));
    if (!landing.ok() || !*landing) return std::nullopt;
    return std::move(**landing);
  }

  // Sends [begin, end) of `basename`: from the whole file once there is one, else as a download
  // lands, starting this node's own when nobody runs one. False when it could not.
  bool SendBody(int fd, Served& served, const std::string& basename, const NamedFile& file,
                uint64_t begin, uint64_t end, std::stop_token stop) {
    uint64_t at = begin;
    Clock::time_point moved = Clock::now();
    std::optional<std::unique_ptr<DownloadProgressReader>> landing;
    bool landing_ended = false;
    std::optional<std::jthread> fetcher;
    auto fetched = std::make_shared<std::atomic<int>>(0);  // 1 ok, -1 failed
    const fs::path whole = served.layout.FilePath(basename);
    while (at < end) {
      // The dataset being forgotten (its Registration waits for the replies that use it) ends
      // a reply too, not only the server's stop.
      if (stop.stop_requested() || served.stop.stop_requested() ||
          Clock::now() - moved > options_.stall) {
        return false;
      }
      if (const int file_fd = ::open(whole.c_str(), O_RDONLY | O_CLOEXEC); file_fd >= 0) {
        struct stat st {};
        const bool complete =
            ::fstat(file_fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == file.bytes;
        const bool sent = complete && SendFile(fd, file_fd, at, end);
        ::close(file_fd);
        if (complete) return sent;
      }
      // A landing that ended without the bytes is not opened again (its record stays until its
      // writer goes): a fetch of our own, if we can, or nothing.
      if (file.raw && !landing && !landing_ended) landing = Landing(served, basename);
      if (landing) {
        // What has landed, or (nothing yet) the next byte, waited for.
        const uint64_t ready = (*landing)->LandedFrom(at);
        auto chunk = (*landing)->Read(at, ready > 0 ? std::min({ready, kChunk, end - at}) : 1,
                                      Clock::now() + std::chrono::milliseconds(500));
        if (chunk.ok()) {
          if (!SendAll(fd, *chunk)) return false;
          Counters().served_bytes.Add(chunk->size());
          at += chunk->size();
          moved = Clock::now();
          continue;
        }
        if (chunk.status().code() != StatusCode::kDeadlineExceeded) {
          landing.reset();
          landing_ended = true;
        }
        continue;
      }
      if (landing_ended && !served.dataset.fetch && !IsRegularFile(whole)) return false;
      // Nobody downloads it: this node's own download, which the next askers share - again
      // when one ends without a file to send (evicted at once, or one that another process
      // runs and that left no record to follow: under validate_hash), until `stall`.
      if (served.dataset.fetch && file.raw && (!fetcher || fetched->load() != 0)) {
        if (fetcher && fetched->load() < 0) return false;
        if (fetcher) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        fetched->store(0);
        landing_ended = false;
        fetcher.reset();
        fetcher.emplace([&served, shard = file.shard, fetched](std::stop_token) {
          const Status status = served.dataset.fetch(shard, served.stop.get_token());
          if (!status.ok()) {
            Log().info("peers: fetching shard {} of {} for a peer failed: {}", shard,
                       served.layout.root().string(), status.message());
          }
          fetched->store(status.ok() ? 1 : -1);
        });
      } else if (!served.dataset.fetch && !landing_ended) {
        return false;  // nobody downloads it (any more), and there is no file
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  static bool SendFile(int fd, int file_fd, uint64_t begin, uint64_t end) {
    off_t offset = static_cast<off_t>(begin);
    while (static_cast<uint64_t>(offset) < end) {
      const ssize_t n = ::sendfile(fd, file_fd, &offset, std::min<uint64_t>(kChunk, end - offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      Counters().served_bytes.Add(static_cast<uint64_t>(n));
    }
    return true;
  }

  const std::unique_ptr<TcpListener> listener_;
  const PeerServerOptions options_;
  const std::string expected_authorization_;
  Mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<Served>>> datasets_ GUARDED_BY(mu_);
  std::list<Connection> connections_ GUARDED_BY(mu_);
  std::jthread thread_;  // last: stopped before the rest goes
};

}  // namespace

Result<std::unique_ptr<PeerServer>> PeerServer::Start(PeerServerOptions options) {
  if (options.token.empty()) {
    return InvalidArgumentError(
        "peer server: no token; the nodes must share one (FERRY_PEER_TOKEN) to serve each other");
  }
  FERRY_ASSIGN_OR_RETURN(
      auto listener, TcpListener::Listen(options.host, options.port, "peer server", "peer port"));
  return std::unique_ptr<PeerServer>(
      std::make_unique<SocketPeerServer>(std::move(listener), std::move(options)));
}

Result<std::vector<std::pair<std::string, PeerDataset>>> FindPeerDatasets(const fs::path& folder) {
  std::vector<fs::path> roots;
  const auto add = [&](const fs::path& root) {
    if (IsRegularFile(root / "index.json")) roots.push_back(root);
  };
  add(folder);
  std::error_code error;
  if (roots.empty()) {
    for (const auto& entry : fs::directory_iterator(folder, error)) {
      if (!entry.is_directory() || entry.path().filename() == kBookkeepingFolder) continue;
      const size_t before = roots.size();
      add(entry.path());
      if (roots.size() > before) continue;
      std::error_code inner;
      for (const auto& split : fs::directory_iterator(entry.path(), inner)) {
        if (split.is_directory()) add(split.path());
      }
    }
  }
  if (error) return ErrnoToStatus(error.value(), "listing", folder);
  std::vector<std::pair<std::string, PeerDataset>> found;
  for (const fs::path& root : roots) {
    FERRY_ASSIGN_OR_RETURN(const std::string bytes, ReadFileToString(root / "index.json"));
    FERRY_ASSIGN_OR_RETURN(DatasetDescription index, LoadIndex(nullptr, "", root));
    found.emplace_back(
        PeerDatasetId(bytes),
        PeerDataset{.root = root,
                    .index = std::make_shared<const DatasetDescription>(std::move(index)),
                    .fetch = nullptr});
  }
  return found;
}

}  // namespace ferry::internal_cache
