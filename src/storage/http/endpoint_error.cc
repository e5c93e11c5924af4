#include "storage/http/endpoint_error.h"

#include <fmt/format.h>

namespace ferry::http {

Status EndpointReplyError(const Response& reply, std::string_view context, std::string_view detail,
                          std::string_view hint) {
  std::string text(detail.empty() ? std::string_view(reply.body).substr(0, 200) : detail);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  const std::string message =
      fmt::format("{}: HTTP {}{}{}", context, reply.status, text.empty() ? "" : ": " + text, hint);
  if (reply.status == 401 || reply.status == 403) return PermissionDeniedError(message);
  if (reply.status == 404) return NotFoundError(message);
  if (reply.status >= 500 || reply.status == 429) return UnavailableError(message);
  return InvalidArgumentError(message);
}

}  // namespace ferry::http
