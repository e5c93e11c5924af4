// ReplyBodies: the content bytes of the HTTP/1.1 replies that go to a client over one
// connection, headers and chunk framing left out: what a server sent as objects, counted on the
// wire, so that a test can hold a client's count of bytes received against the server's side.
//
// It follows the replies' framing: Content-Length, chunked transfer coding, or the connection's
// end. A reply to HEAD, or with status 1xx, 204 or 304, has no body: the proxy's up direction
// says which method each request used (Asked), in order. Bytes that are not a well-formed reply
// head (over 64 KiB without its blank line) are left uncounted and the rest of the connection
// with them.
//
// Thread-safety: Asked and Sent may be called from two threads (a connection's two
// directions); body_bytes from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

namespace ferry::wan {

class ReplyBodies {
 public:
  /// Counts into `total` (shared by the proxy's connections) as well as its own count.
  explicit ReplyBodies(std::atomic<uint64_t>* total = nullptr) : total_(total) {}

  /// A request with this method ("GET", "HEAD", ...) went to the server.
  void Asked(std::string_view method);
  /// These bytes of the server's replies went to the client.
  void Sent(std::string_view bytes);
  uint64_t body_bytes() const { return own_.load(std::memory_order_relaxed); }

 private:
  enum class State {
    kHead,
    kBody,
    kUntilClose,
    kChunkSize,
    kChunkData,
    kChunkEnd,
    kTrailer,
    kLost
  };
  void StartBody(std::string_view head);
  void Count(uint64_t n);

  std::atomic<uint64_t>* const total_;
  std::atomic<uint64_t> own_{0};
  std::mutex mu_;
  std::deque<std::string> methods_;  // guarded by mu_: requests not answered yet
  // The down direction's alone.
  State state_ = State::kHead;
  std::string line_;        // the head, a chunk-size line or a trailer line so far
  uint64_t remaining_ = 0;  // of the body, the chunk's data, or the chunk's CRLF
};

}  // namespace ferry::wan
