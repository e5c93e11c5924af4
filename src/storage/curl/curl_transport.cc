#include "storage/curl/curl_transport.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"
#include "storage/env_lookup.h"

namespace ferry::http {
namespace {

constexpr size_t kMaxErrorBody = 64 << 10;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::optional<std::string> CaBundle() {
  for (const char* name : {"FERRY_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"}) {
    if (auto path = ProcessEnv(name)) return path;
  }
  return std::nullopt;
}

// One request in flight.
struct Transfer {
  Request request;
  BodySink sink;
  Completion done;
  Response response;
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  uint64_t upload_offset = 0;
  Status callback_error;  // first error raised inside a callback (sink or body source)
  std::chrono::steady_clock::time_point last_to_sink;  // when the sink was last called
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  char error_buffer[CURL_ERROR_SIZE] = {};
  curl_socket_t socket = CURL_SOCKET_BAD;  // the one the loop watches for it, if any

  ~Transfer() {
    if (header_list != nullptr) curl_slist_free_all(header_list);
    if (easy != nullptr) curl_easy_cleanup(easy);
  }
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (line.empty()) {
    // End of a header block. 1xx blocks (100 Continue) are followed by the real one.
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && t->request.on_headers) {
      t->request.on_headers(static_cast<int>(status), t->response.headers);
    }
    return n;
  }
  if (line.starts_with("HTTP/")) {
    // A new status line (after 100 Continue, say): the headers so far belong to an earlier one.
    t->response.headers = Headers();
    return n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    t->response.headers.Add(std::string(line.substr(0, colon)), std::string(value));
  }
  return n;
}

// Hands `chunk` to the sink; false when the sink says stop (its error is kept for the result).
bool ToSink(Transfer& t, std::string_view chunk) {
  t.last_to_sink = std::chrono::steady_clock::now();
  Status s = t.sink(chunk);
  if (s.ok()) return true;
  t.callback_error = std::move(s);
  return false;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 300 || !t->sink) {
    if (status >= 300 && t->response.body.size() + n > kMaxErrorBody) return n;  // keep the head
    t->response.body.append(data, n);
    return n;
  }
  return ToSink(*t, std::string_view(data, n)) ? n : 0;  // 0 aborts with CURLE_WRITE_ERROR
}

// libcurl calls this often while bytes move and, as documented, about once a second while none
// do - before the headers, after the last byte, and on a stalled connection alike. A sink that
// has been told to stop hears it here (an empty chunk) even from a connection that brings
// nothing, which would otherwise hold it until the low-speed timeout (30 s by default). While
// bytes reach the sink it hears them instead: the empty call is made only after a quiet spell,
// not once more per chunk through every layer of sinks.
int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  constexpr auto kQuiet = std::chrono::milliseconds(100);
  auto* t = static_cast<Transfer*>(user);
  // Already failing (libcurl calls once more as the transfer ends): the first error stands.
  if (!t->callback_error.ok()) return 1;
  if (std::chrono::steady_clock::now() - t->last_to_sink < kQuiet) return 0;
  long status = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 300) return 0;  // an error body goes to the response, never to the sink
  return ToSink(*t, std::string_view()) ? 0 : 1;  // 1 aborts with CURLE_ABORTED_BY_CALLBACK
}

size_t OnUpload(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const BodySource& body = *t->request.body;
  if (t->upload_offset >= body.size) return 0;
  const size_t want = std::min<uint64_t>(size * count, body.size - t->upload_offset);
  auto n = body.read(t->upload_offset, buffer, want);
  if (!n) {
    t->callback_error = n.status();
    return CURL_READFUNC_ABORT;
  }
  t->upload_offset += *n;
  return *n;
}

int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
  t->upload_offset = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

Status CurlError(CURLcode code, const Transfer& t) {
  const std::string url = RedactUrl(t.request.url);
  std::string detail = curl_easy_strerror(code);
  if (t.error_buffer[0] != '\0') detail += fmt::format(" ({})", t.error_buffer);
  std::string message = fmt::format("{} {}: {}", t.request.method, url, detail);
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return DeadlineExceededError(std::move(message));
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
      return FailedPreconditionError(std::move(message) + " (TLS verification failed)");
    case CURLE_UNSUPPORTED_PROTOCOL:
      // For an http(s) URL this is a garbled reply ("Received HTTP/0.9 when not allowed": a
      // status line corrupted on the way, found by the fault suite), worth a retry.
      if (t.request.url.starts_with("http://") || t.request.url.starts_with("https://")) {
        return UnavailableError(std::move(message));
      }
      return InvalidArgumentError(std::move(message));
    case CURLE_URL_MALFORMAT:
      return InvalidArgumentError(std::move(message));
    case CURLE_OUT_OF_MEMORY:
      return ResourceExhaustedError(std::move(message));
    default:
      // Connection refused or reset, DNS, a body cut short, TLS handshake: all worth a retry.
      return UnavailableError(std::move(message));
  }
}

class CurlTransport : public Transport {
 public:
  explicit CurlTransport(CurlTransportOptions options) : options_(std::move(options)) {
    GlobalInit();
    multi_ = curl_multi_init();
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, options_.max_cached_connections);
    if (options_.max_connections_per_host > 0) {
      curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, options_.max_connections_per_host);
    }
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, OnSocket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, OnTimer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.fd = wake_fd_;
    if (epoll_fd_ < 0 || wake_fd_ < 0 ||
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
      // Every request then fails with this instead of the process aborting.
      setup_error_ = ResourceExhaustedError(
          fmt::format("cannot set up the HTTP transport's event loop: {}", std::strerror(errno)));
      return;
    }
    thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  }

  ~CurlTransport() override {
    if (thread_.joinable()) {
      thread_.request_stop();
      Wake();
      thread_.join();
    }
    curl_multi_cleanup(multi_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
  }

  void Submit(Request request, BodySink sink, Completion done) override EXCLUDES(mu_) {
    if (!setup_error_.ok()) return done(setup_error_);
    auto t = std::make_unique<Transfer>();
    t->request = std::move(request);
    t->sink = std::move(sink);
    t->done = std::move(done);
    bool stopping;
    {
      MutexLock lock(mu_);
      stopping = stopping_;
      if (!stopping) pending_.push_back(std::move(t));
    }
    if (stopping) return t->done(CancelledError("transport is shutting down"));
    Wake();
  }

 private:
  // Configures the easy handle of `t`; an error completes the transfer at once.
  Status Prepare(Transfer& t) {
    t.easy = curl_easy_init();
    if (t.easy == nullptr) return ResourceExhaustedError("cannot allocate a curl handle");
    CURL* e = t.easy;
    const Request& r = t.request;
    curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error_buffer);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    // Object keys may hold "." and ".." segments; they name objects, not folders to resolve.
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    if (t.sink) {
      curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, OnProgress);
      curl_easy_setopt(e, CURLOPT_XFERINFODATA, &t);
    }
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.timeouts.connect_ms));
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(r.timeouts.low_speed_bytes));
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(r.timeouts.low_speed_seconds));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeouts.total_ms));
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L << 10);
    if (!options_.ca_bundle.empty()) {
      curl_easy_setopt(e, CURLOPT_CAINFO, options_.ca_bundle.c_str());
    } else if (const auto ca = CaBundle()) {
      curl_easy_setopt(e, CURLOPT_CAINFO, ca->c_str());
    }

    if (r.method == "HEAD") {
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (r.method != "GET") {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    if (r.body) {
      curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body->size));
      curl_easy_setopt(e, CURLOPT_READFUNCTION, OnUpload);
      curl_easy_setopt(e, CURLOPT_READDATA, &t);
      curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, OnSeek);
      curl_easy_setopt(e, CURLOPT_SEEKDATA, &t);
      // CURLOPT_UPLOAD makes the method PUT; CUSTOMREQUEST above overrides it (POST, ...).
    }
    for (const auto& f : r.headers.fields()) {
      const std::string line = f.value.empty() ? f.name + ";" : f.name + ": " + f.value;
      t.header_list = curl_slist_append(t.header_list, line.c_str());
    }
    // No "Expect: 100-continue" round trip before bodies; no transfer-encoding surprises.
    t.header_list = curl_slist_append(t.header_list, "Expect:");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.header_list);
    return Status::Ok();
  }

  void Finish(std::unique_ptr<Transfer> t, CURLcode code) {
    Result<Response> result = Status();
    if (!t->callback_error.ok()) {
      result = t->callback_error;
    } else if (code != CURLE_OK) {
      result = CurlError(code, *t);
    } else {
      long status = 0;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
      t->response.status = static_cast<int>(status);
      result = std::move(t->response);
    }
    if (Log().should_log(spdlog::level::debug)) {
      curl_off_t down = 0, up = 0;
      curl_easy_getinfo(t->easy, CURLINFO_SIZE_DOWNLOAD_T, &down);
      curl_easy_getinfo(t->easy, CURLINFO_SIZE_UPLOAD_T, &up);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t->started)
              .count();
      Log().debug("{} {} -> {} ({} bytes down, {} up, {:.1f} ms)", t->request.method,
                  RedactUrl(t->request.url),
                  result ? std::to_string(result->status) : result.error().ToString(), down, up,
                  ms);
    }
    Completion done = std::move(t->done);
    t.reset();  // release the handle before user code runs
    done(std::move(result));
  }

  void Wake() {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }

  // libcurl's socket interface: it says which sockets to watch (OnSocket) and when its next
  // timeout falls due (OnTimer); the loop tells it which socket is ready. curl_multi_perform
  // instead checks the socket of every transfer with a poll of its own at each wakeup (libcurl
  // 7.88): with 16 shards in 8 ranged parts each on a capped link, up to 875,000 polls per GB, a
  // fifth of the process's CPU.
  static int OnSocket(CURL* easy, curl_socket_t socket, int what, void* user, void*) {
    auto* self = static_cast<CurlTransport*>(user);
    Transfer* t = nullptr;
    if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, &t) == CURLE_OK && t != nullptr) {
      t->socket = (what & CURL_POLL_INOUT) == 0 ? CURL_SOCKET_BAD : socket;
    }
    if ((what & CURL_POLL_INOUT) == 0) {  // CURL_POLL_REMOVE (or none): never a hang-up spin
      ::epoll_ctl(self->epoll_fd_, EPOLL_CTL_DEL, socket, nullptr);  // may be closed already
      return 0;
    }
    epoll_event event{};
    event.data.fd = socket;
    if ((what & CURL_POLL_IN) != 0) event.events |= EPOLLIN;
    if ((what & CURL_POLL_OUT) != 0) event.events |= EPOLLOUT;
    if (::epoll_ctl(self->epoll_fd_, EPOLL_CTL_MOD, socket, &event) != 0 && errno == ENOENT &&
        ::epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, socket, &event) != 0) {
      Log().warn("HTTP transport: cannot watch socket {}: {}", socket, std::strerror(errno));
      return -1;
    }
    return 0;
  }

  static int OnTimer(CURLM*, long timeout_ms, void* user) {
    auto* self = static_cast<CurlTransport*>(user);
    if (timeout_ms < 0) {
      self->timer_.reset();
    } else {
      self->timer_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    }
    return 0;
  }

  // Milliseconds epoll may sleep: until libcurl's timeout, and at most until the next sweep.
  int SleepMs() const {
    constexpr int kMaxSleepMs = 1000;
    if (!timer_) return kMaxSleepMs;
    const auto left = *timer_ - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return 0;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return static_cast<int>(std::min<int64_t>(ms, kMaxSleepMs));
  }

  void Loop(std::stop_token stop) EXCLUDES(mu_) {
    constexpr auto kSweepEvery = std::chrono::seconds(1);
    std::unordered_map<CURL*, std::unique_ptr<Transfer>> active;
    epoll_event events[64];
    auto last_sweep = std::chrono::steady_clock::now();
    while (!stop.stop_requested()) {
      std::deque<std::unique_ptr<Transfer>> incoming;
      {
        MutexLock lock(mu_);
        incoming.swap(pending_);
      }
      for (auto& t : incoming) {
        if (Status s = Prepare(*t); !s.ok()) {
          Completion done = std::move(t->done);
          t.reset();
          done(s);
          continue;
        }
        curl_multi_add_handle(multi_, t->easy);  // sets a timeout of 0: started below
        CURL* easy = t->easy;
        active.emplace(easy, std::move(t));
      }
      const int ready = ::epoll_wait(epoll_fd_, events, std::size(events), SleepMs());
      int running = 0;
      for (int i = 0; i < ready; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_fd_) {
          uint64_t count;
          (void)!::read(wake_fd_, &count, sizeof count);
          continue;
        }
        int mask = 0;
        if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) != 0) mask |= CURL_CSELECT_IN;
        if ((events[i].events & EPOLLOUT) != 0) mask |= CURL_CSELECT_OUT;
        if ((events[i].events & EPOLLERR) != 0) mask |= CURL_CSELECT_ERR;
        curl_multi_socket_action(multi_, fd, mask, &running);
      }
      if (timer_ && *timer_ <= std::chrono::steady_clock::now()) {
        timer_.reset();  // OnTimer sets the next one
        curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      if (const auto now = std::chrono::steady_clock::now(); now - last_sweep >= kSweepEvery) {
        last_sweep = now;
        SweepQuiet(active, now - kSweepEvery);
      }
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL* easy = msg->easy_handle;
        const CURLcode code = msg->data.result;
        curl_multi_remove_handle(multi_, easy);
        auto it = active.find(easy);
        if (it == active.end()) continue;
        auto t = std::move(it->second);
        active.erase(it);
        Finish(std::move(t), code);
      }
    }
    // Shutting down: nothing new is accepted; everything in flight or queued is cancelled.
    std::deque<std::unique_ptr<Transfer>> leftover;
    {
      MutexLock lock(mu_);
      stopping_ = true;
      leftover.swap(pending_);
    }
    for (auto& [easy, t] : active) {
      curl_multi_remove_handle(multi_, easy);
      leftover.push_back(std::move(t));
    }
    for (auto& t : leftover) {
      Completion done = std::move(t->done);
      t.reset();
      done(CancelledError("transport shut down before the request completed"));
    }
  }

  // A transfer whose socket has been quiet since `quiet_since` is run once, so that its sink
  // hears a stop (OnProgress) even where no stall limit makes libcurl look at it each second
  // (FERRY_LOW_SPEED_LIMIT=0). Mask 0: libcurl checks the socket itself.
  void SweepQuiet(const std::unordered_map<CURL*, std::unique_ptr<Transfer>>& active,
                  std::chrono::steady_clock::time_point quiet_since) {
    std::vector<curl_socket_t> quiet;
    for (const auto& entry : active) {
      const Transfer& t = *entry.second;
      if (t.sink && t.last_to_sink <= quiet_since && t.socket != CURL_SOCKET_BAD) {
        quiet.push_back(t.socket);
      }
    }
    int running = 0;
    // Collected first: an action may close a socket.
    for (curl_socket_t socket : quiet) curl_multi_socket_action(multi_, socket, 0, &running);
  }

  const CurlTransportOptions options_;
  CURLM* multi_ = nullptr;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: Submit and the destructor wake the loop through it
  Status setup_error_;
  // libcurl's next timeout; only the loop's thread (and libcurl's callbacks on it) touch it.
  std::optional<std::chrono::steady_clock::time_point> timer_;
  Mutex mu_;
  std::deque<std::unique_ptr<Transfer>> pending_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::jthread thread_;  // last: uses everything above
};

}  // namespace

std::shared_ptr<Transport> MakeCurlTransport(CurlTransportOptions options) {
  return std::make_shared<CurlTransport>(options);
}

}  // namespace ferry::http
