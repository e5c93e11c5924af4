#include "bench/wan/lying_reply.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/ascii.h"
#include "base/file_util.h"

namespace ferry::wan {
namespace {

bool SameName(std::string_view a, std::string_view b) { return AsciiLower(a) == AsciiLower(b); }

// "bytes a-b/total" -> {a, b, total}; total nullopt for "*".
struct ContentRange {
  uint64_t first = 0, last = 0;
  std::optional<uint64_t> total;
};

std::optional<ContentRange> ParseContentRange(std::string_view value) {
  if (!value.starts_with("bytes ")) return std::nullopt;
  value.remove_prefix(6);
  const size_t dash = value.find('-');
  const size_t slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return std::nullopt;
  }
  const auto first = ParseUint(value.substr(0, dash));
  const auto last = ParseUint(value.substr(dash + 1, slash - dash - 1));
  if (!first || !last || *last < *first) return std::nullopt;
  ContentRange out{*first, *last, std::nullopt};
  if (value.substr(slash + 1) != "*") {
    out.total = ParseUint(value.substr(slash + 1));
    if (!out.total) return std::nullopt;
  }
  return out;
}

// A whole object made up for a range: no bigger than this (it is held in memory).
constexpr uint64_t kMaxMadeUpObject = uint64_t{256} << 20;

// A reply of the proxy's own making.
HttpReply MadeUp(std::string status_line, std::string content_type, std::string body,
                 std::vector<std::pair<std::string, std::string>> extra = {}) {
  HttpReply reply{
      std::move(status_line), {{"Content-Type", std::move(content_type)}}, std::move(body)};
  for (auto& header : extra) reply.headers.push_back(std::move(header));
  reply.headers.emplace_back("Content-Length", std::to_string(reply.body.size()));
  return reply;
}

HttpReply PreconditionFailed() {
  return MadeUp("HTTP/1.1 412 Precondition Failed", "application/xml",
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>PreconditionFailed"
                "</Code><Message>At least one of the pre-conditions you specified did not hold"
                "</Message><Condition>If-Match</Condition></Error>",
                {{"x-ms-error-code", "ConditionNotMet"}});
}

// `etag` with its last letter or digit changed (quotes kept), so it keeps its form: an MD5
// stays 32 hex digits, an Azure etag stays 0x....
std::string AnotherEtag(std::string etag) {
  for (size_t i = etag.size(); i-- > 0;) {
    char& c = etag[i];
    if (c >= '0' && c <= '9') {
      c = c == '9' ? '0' : static_cast<char>(c + 1);
      return etag;
    }
    if ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) {
      c = c == 'f' ? 'a' : c == 'F' ? 'A' : static_cast<char>(c + 1);
      return etag;
    }
  }
  return etag + "x";
}

}  // namespace

int HttpReply::status() const {
  // "HTTP/1.1 200 OK"
  const size_t space = status_line.find(' ');
  if (space == std::string::npos) return 0;
  const auto code = ParseUint(std::string_view(status_line).substr(space + 1, 3));
  return code ? static_cast<int>(*code) : 0;
}

std::optional<std::string_view> HttpReply::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (SameName(n, name)) return std::string_view(v);
  }
  return std::nullopt;
}

void HttpReply::SetHeader(std::string_view name, std::string value) {
  for (auto& [n, v] : headers) {
    if (SameName(n, name)) {
      v = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::string(name), std::move(value));
}

void HttpReply::RemoveHeader(std::string_view name) {
  std::erase_if(headers, [&](const auto& h) { return SameName(h.first, name); });
}

std::string HttpReply::Serialize() const {
  std::string out = status_line + "\r\n";
  for (const auto& [n, v] : headers) out += fmt::format("{}: {}\r\n", n, v);
  out += "\r\n";
  out += body;
  return out;
}

Result<std::optional<HttpReply>> ParseReply(std::string_view bytes) {
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (bytes.size() > (64 << 10)) return InvalidArgumentError("reply headers over 64 KiB");
    return std::optional<HttpReply>();
  }
  HttpReply reply;
  std::string_view head = bytes.substr(0, end);
  size_t line_end = head.find("\r\n");
  reply.status_line = std::string(head.substr(0, line_end));
  if (!reply.status_line.starts_with("HTTP/1.") || reply.status() == 0) {
    return InvalidArgumentError(fmt::format("not an HTTP reply: {}", reply.status_line));
  }
  while (line_end != std::string_view::npos) {
    head.remove_prefix(line_end + 2);
    line_end = head.find("\r\n");
    const std::string_view line = head.substr(0, line_end);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    reply.headers.emplace_back(std::string(line.substr(0, colon)),
                               std::string(TrimAsciiWhitespace(line.substr(colon + 1))));
  }
  const auto length_text = reply.Header("Content-Length");
  const auto length = length_text ? ParseUint(*length_text) : std::nullopt;
  if (!length) return InvalidArgumentError("a reply without Content-Length is not rewritten");
  const std::string_view body = bytes.substr(end + 4);
  if (body.size() < *length) return std::optional<HttpReply>();
  reply.body = std::string(body.substr(0, *length));
  return std::optional<HttpReply>(std::move(reply));
}

Result<HttpReply> ReadReply(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string bytes;
  std::string buffer(256 << 10, '\0');
  for (;;) {
    FERRY_ASSIGN_OR_RETURN(std::optional<HttpReply> reply, ParseReply(bytes));
    if (reply) return std::move(*reply);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return DeadlineExceededError("no whole reply in time");
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return ErrnoToStatus(errno, "poll", "the server");
    if (ready <= 0) continue;  // interrupted, or the deadline: checked above
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "read", "the server");
    if (n == 0) return UnavailableError("the server closed the connection mid-reply");
    bytes.append(buffer.data(), static_cast<size_t>(n));
  }
}

std::optional<std::string_view> RequestHeader(std::string_view request, std::string_view name) {
  const size_t end = request.find("\r\n\r\n");
  std::string_view head = request.substr(0, end);
  size_t line_end = head.find("\r\n");
  while (line_end != std::string_view::npos) {
    head.remove_prefix(line_end + 2);
    line_end = head.find("\r\n");
    const std::string_view line = head.substr(0, line_end);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && SameName(line.substr(0, colon), name)) {
      return TrimAsciiWhitespace(line.substr(colon + 1));
    }
  }
  return std::nullopt;
}

bool IsLie(FaultKind kind) {
  return kind == FaultKind::kShort || kind == FaultKind::kOtherRange || kind == FaultKind::kWhole ||
         kind == FaultKind::kHtml || kind == FaultKind::kEtag;
}

HttpReply HtmlErrorPage() {
  return MadeUp("HTTP/1.1 200 OK", "text/html; charset=utf-8",
                "<!DOCTYPE html>\n<html><head><title>Service Unavailable</title></head>\n"
                "<body><h1>Service Unavailable</h1><p>The server is temporarily unable to "
                "service your request. Please try again later.</p></body></html>\n");
}

std::optional<HttpReply> Lie(FaultKind kind, std::string_view request, HttpReply reply,
                             uint64_t random) {
  if (kind == FaultKind::kHtml) return HtmlErrorPage();
  const int status = reply.status();
  if (status != 200 && status != 206) return std::nullopt;  // an honest error stays one
  std::optional<ContentRange> range;
  if (status == 206) {
    const auto value = reply.Header("Content-Range");
    if (!value || !(range = ParseContentRange(*value))) return std::nullopt;
  }
  switch (kind) {
    case FaultKind::kShort:
      if (reply.body.empty()) return std::nullopt;
      reply.body.resize(random % reply.body.size());
      reply.SetHeader("Content-Length", std::to_string(reply.body.size()));
      return reply;
    case FaultKind::kOtherRange: {
      if (reply.body.size() < 2) return std::nullopt;
      const uint64_t first = range ? range->first : 0;
      const std::string total = range ? (range->total ? std::to_string(*range->total) : "*")
                                      : std::to_string(reply.body.size());
      const size_t skip = 1 + random % std::min<size_t>(reply.body.size() - 1, 4096);
      reply.body.erase(0, skip);
      reply.status_line = "HTTP/1.1 206 Partial Content";
      reply.SetHeader("Content-Range", fmt::format("bytes {}-{}/{}", first + skip,
                                                   first + skip + reply.body.size() - 1, total));
      reply.SetHeader("Content-Length", std::to_string(reply.body.size()));
      return reply;
    }
    case FaultKind::kWhole: {
      if (!range || !range->total || *range->total > kMaxMadeUpObject ||
          range->first + reply.body.size() > *range->total) {
        return std::nullopt;
      }
      std::string whole(*range->total, '\0');
      std::copy(reply.body.begin(), reply.body.end(),
                whole.begin() + static_cast<ptrdiff_t>(range->first));
      reply.body = std::move(whole);
      reply.status_line = "HTTP/1.1 200 OK";
      reply.RemoveHeader("Content-Range");
      reply.SetHeader("Content-Length", std::to_string(reply.body.size()));
      return reply;
    }
    case FaultKind::kEtag: {
      const auto etag = reply.Header("ETag");
      if (!etag) return std::nullopt;
      if (RequestHeader(request, "If-Match")) return PreconditionFailed();
      reply.SetHeader("ETag", AnotherEtag(std::string(*etag)));
      return reply;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace ferry::wan
