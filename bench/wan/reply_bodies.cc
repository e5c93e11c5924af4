#include "bench/wan/reply_bodies.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace ferry::wan {
namespace {

constexpr size_t kMaxHead = size_t{64} << 10;

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<uint64_t> Number(std::string_view text, int base) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

}  // namespace

void ReplyBodies::Asked(std::string_view method) {
  std::lock_guard lock(mu_);
  methods_.emplace_back(method);
}

void ReplyBodies::Count(uint64_t n) {
  own_.fetch_add(n, std::memory_order_relaxed);
  if (total_ != nullptr) total_->fetch_add(n, std::memory_order_relaxed);
}

// `head`: the status line and header fields, without the blank line.
void ReplyBodies::StartBody(std::string_view head) {
  std::string method;
  {
    std::lock_guard lock(mu_);
    if (!methods_.empty()) {
      method = std::move(methods_.front());
      methods_.pop_front();
    }
  }
  const size_t first_space = head.find(' ');
  const auto status = first_space == std::string_view::npos
                          ? std::nullopt
                          : Number(head.substr(first_space + 1), 10);
  if (!status) {
    state_ = State::kLost;
    return;
  }
  if (*status >= 100 && *status < 200) {
    std::lock_guard lock(mu_);  // an interim reply: the final one answers the same request
    methods_.push_front(method);
  }
  if (method == "HEAD" || *status < 200 || *status == 204 || *status == 304) {
    state_ = State::kHead;
    return;
  }
  std::optional<uint64_t> length;
  bool chunked = false;
  size_t at = head.find("\r\n");
  while (at != std::string_view::npos && at + 2 < head.size()) {
    const size_t end = head.find("\r\n", at + 2);
    const std::string_view field =
        head.substr(at + 2, end == std::string_view::npos ? std::string_view::npos : end - at - 2);
    at = end;
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name = Lower(Trim(field.substr(0, colon)));
    const std::string_view value = Trim(field.substr(colon + 1));
    if (name == "content-length") length = Number(value, 10);
    if (name == "transfer-encoding" && Lower(value).find("chunked") != std::string::npos) {
      chunked = true;
    }
  }
  if (chunked) {
    state_ = State::kChunkSize;
  } else if (length) {
    remaining_ = *length;
    state_ = *length > 0 ? State::kBody : State::kHead;
  } else {
    state_ = State::kUntilClose;
  }
}

void ReplyBodies::Sent(std::string_view bytes) {
  while (!bytes.empty()) {
    switch (state_) {
      case State::kLost:
        return;
      case State::kUntilClose:
        Count(bytes.size());
        return;
      case State::kBody:
      case State::kChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
        Count(n);
        bytes.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) {
          if (state_ == State::kBody) {
            state_ = State::kHead;
          } else {
            state_ = State::kChunkEnd;
            remaining_ = 2;
          }
        }
        break;
      }
      case State::kChunkEnd: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
        bytes.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kChunkSize;
        break;
      }
      case State::kHead:
      case State::kChunkSize:
      case State::kTrailer: {
        // Up to the end of the head (a blank line) or of one line.
        const std::string_view end_mark = state_ == State::kHead ? "\r\n\r\n" : "\r\n";
        const size_t before = line_.size();
        line_.append(bytes);
        const size_t end = line_.find(end_mark, before >= 3 ? before - 3 : 0);
        if (end == std::string::npos) {
          if (line_.size() > kMaxHead) state_ = State::kLost;
          return;
        }
        const size_t used = end + end_mark.size() - before;
        bytes.remove_prefix(used);
        const std::string line = line_.substr(0, end);
        line_.clear();
        if (state_ == State::kHead) {
          StartBody(line);
        } else if (state_ == State::kTrailer) {
          if (line.empty()) state_ = State::kHead;  // the chunked body's end
        } else {
          const auto size = Number(Trim(line.substr(0, line.find(';'))), 16);
          if (!size) {
            state_ = State::kLost;
            return;
          }
          remaining_ = *size;
          state_ = *size > 0 ? State::kChunkData : State::kTrailer;
        }
        break;
      }
    }
  }
}

}  // namespace ferry::wan
