#include "storage/azure/azure_auth.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "base/ascii.h"
#include "storage/http/http_date.h"
#include "storage/http/url_encoding.h"
#include "storage/sha256.h"

namespace ferry::internal_azure {
namespace {

// The value the string-to-sign takes for one standard header ("" when absent).
std::string_view StandardHeader(const http::Request& request, std::string_view name) {
  return request.headers.Get(name).value_or(std::string_view());
}

std::string ContentLengthToSign(const http::Request& request) {
  std::string length;
  if (auto header = request.headers.Get("Content-Length")) {
    length = std::string(TrimAsciiWhitespace(*header));
  } else if (request.body) {
    length = std::to_string(request.body->size);
  }
  return length == "0" ? std::string() : length;
}

std::string CanonicalizedHeaders(const http::Request& request) {
  // Lowercase name -> values in the order sent; a repeated header is joined with ','.
  std::map<std::string, std::vector<std::string_view>> headers;
  for (const auto& field : request.headers.fields()) {
    std::string name = AsciiLower(TrimAsciiWhitespace(field.name));
    if (name.starts_with("x-ms-"))
      headers[std::move(name)].push_back(TrimAsciiWhitespace(field.value));
  }
  std::string out;
  for (const auto& [name, values] : headers) {
    out += name;
    out += ':';
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out += ',';
      out += values[i];
    }
    out += '\n';
  }
  return out;
}

std::string CanonicalizedResource(std::string_view url, std::string_view account) {
  std::string_view rest = url;
  if (const size_t scheme_end = rest.find("://"); scheme_end != std::string_view::npos) {
    rest.remove_prefix(scheme_end + 3);
  }
  const size_t query_start = rest.find('?');
  std::string_view query;
  if (query_start != std::string_view::npos) {
    query = rest.substr(query_start + 1);
    rest = rest.substr(0, query_start);
  }
  const size_t path_start = rest.find('/');
  const std::string_view path =
      path_start == std::string_view::npos ? std::string_view("/") : rest.substr(path_start);

  std::string out = fmt::format("/{}{}", account, path);
  std::map<std::string, std::vector<std::string>> params;  // sorted by lowercase name
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      const std::string_view name = pair.substr(0, eq);
      const std::string_view value =
          eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
      params[AsciiLower(http::PercentDecode(name))].push_back(http::PercentDecode(value));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  for (auto& [name, values] : params) {
    std::sort(values.begin(), values.end());
    out += fmt::format("\n{}:{}", name, fmt::join(values, ","));
  }
  return out;
}

}  // namespace

std::string SharedKeyStringToSign(const http::Request& request, std::string_view account) {
  std::string out = request.method;
  out += '\n';
  for (std::string_view name : {"Content-Encoding", "Content-Language"}) {
    out += StandardHeader(request, name);
    out += '\n';
  }
  out += ContentLengthToSign(request);
  out += '\n';
  for (std::string_view name : {"Content-MD5", "Content-Type", "Date", "If-Modified-Since",
                                "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"}) {
    out += StandardHeader(request, name);
    out += '\n';
  }
  out += CanonicalizedHeaders(request);
  out += CanonicalizedResource(request.url, account);
  return out;
}

std::string SharedKeySignature(std::string_view key, std::string_view string_to_sign) {
  return Base64Encode(HmacSha256(key, string_to_sign));
}

void SignSharedKey(http::Request& request, std::string_view account, std::string_view key,
                   std::chrono::system_clock::time_point now) {
  if (!request.headers.Get("x-ms-date"))
    request.headers.Set("x-ms-date", http::FormatHttpDate(now));
  const std::string signature = SharedKeySignature(key, SharedKeyStringToSign(request, account));
  request.headers.Set("Authorization", fmt::format("SharedKey {}:{}", account, signature));
}

std::string AppendSasToken(std::string_view url, std::string_view sas_token) {
  if (sas_token.starts_with('?')) sas_token.remove_prefix(1);
  if (sas_token.empty()) return std::string(url);
  const char separator =
      url.find('?') == std::string_view::npos ? '?' : (url.ends_with('?') ? '\0' : '&');
  std::string out(url);
  if (separator != '\0') out += separator;
  out += sas_token;
  return out;
}

void Authorize(http::Request& request, const AzureCredentials& credentials,
               std::chrono::system_clock::time_point now) {
  if (credentials.has_shared_key()) {
    SignSharedKey(request, credentials.account, credentials.account_key, now);
  } else {
    // SAS and anonymous requests still carry a date: harmless, and it makes logs comparable.
    if (!request.headers.Get("x-ms-date"))
      request.headers.Set("x-ms-date", http::FormatHttpDate(now));
    if (credentials.has_sas()) request.url = AppendSasToken(request.url, credentials.sas_token);
  }
}

void AuthorizeBearer(http::Request& request, std::string_view access_token,
                     std::chrono::system_clock::time_point now) {
  if (!request.headers.Get("x-ms-date"))
    request.headers.Set("x-ms-date", http::FormatHttpDate(now));
  request.headers.Set("Authorization", fmt::format("Bearer {}", access_token));
}

}  // namespace ferry::internal_azure
