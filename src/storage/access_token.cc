#include "storage/access_token.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "storage/http/endpoint_error.h"

namespace ferry::internal_storage {
namespace {

// A number of seconds given as a JSON number or a string of digits; nullopt otherwise.
std::optional<int64_t> Seconds(const nlohmann::json& json, const char* key) {
  const auto it = json.find(key);
  if (it == json.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) return std::nullopt;
  const std::string& text = it->get_ref<const std::string&>();
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Result<AccessToken> ParseAccessTokenReply(std::string_view body,
                                          std::chrono::system_clock::time_point now,
                                          std::string_view context) {
  using std::chrono::seconds;
  const auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return DataLossError(fmt::format("{}: the reply is not JSON", context));
  AccessToken token;
  if (const auto it = json.find("access_token"); it != json.end() && it->is_string()) {
    token.access_token = it->get<std::string>();
  }
  if (const auto in = Seconds(json, "expires_in"); in && *in > 0) {
    token.expiration = now + seconds(*in);
  } else if (const auto on = Seconds(json, "expires_on"); on && *on > 0) {
    token.expiration = std::chrono::system_clock::time_point(seconds(*on));
  }
  if (token.access_token.empty() || !token.expiration) {
    return DataLossError(fmt::format(
        "{}: the reply lacks access_token or a readable expires_in / expires_on", context));
  }
  return token;
}

std::string OAuthErrorDetail(std::string_view body) {
  const auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return "";
  auto text = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string detail = text("error");
  std::string description = text("error_description");
  if (description.empty()) description = text("message");
  description = description.substr(0, std::min(description.find_first_of("\r\n"), size_t{240}));
  if (!description.empty()) detail += (detail.empty() ? "" : ": ") + description;
  return detail;
}

Status TokenEndpointError(const http::Response& reply, std::string_view context,
                          std::string_view hint) {
  return http::EndpointReplyError(reply, context, OAuthErrorDetail(reply.body), hint);
}

Result<std::string> PostTokenForm(const std::string& url, const std::string& body,
                                  std::string_view context, std::string_view hint,
                                  http::Transport* transport, const http::Headers& headers) {
  http::Request request;
  request.method = "POST";
  request.url = url;
  request.headers = headers;
  request.headers.Set("Content-Type", "application/x-www-form-urlencoded");
  request.headers.Set("Accept", "application/json");
  request.body = ByteSource::FromView(body);  // Execute returns before `body` goes
  // A token endpoint answers in seconds or not at all: a training job must not hang on it.
  request.timeouts.connect_ms = 5'000;
  request.timeouts.total_ms = 30'000;
  const auto owned = http::DefaultIfNull(transport);
  auto reply = transport->Execute(std::move(request));
  if (!reply) return reply.status().WithContext(context);
  if (reply->status >= 300) return TokenEndpointError(*reply, context, hint);
  return std::move(reply->body);
}

}  // namespace ferry::internal_storage
