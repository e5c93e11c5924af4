#include "storage/s3/s3_signer.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <map>
#include <vector>

#include "base/ascii.h"
#include "base/hex.h"
#include "storage/http/url_encoding.h"
#include "storage/s3/s3_endpoint.h"

namespace ferry::internal_s3 {
namespace {

// Headers a transport or proxy may add, drop or rewrite after signing: signing them would make
// a correct request fail verification.
constexpr std::string_view kUnsignedHeaders[] = {
    "authorization",       "connection",        "content-length", "expect",
    "proxy-authorization", "transfer-encoding", "user-agent",     "x-amzn-trace-id"};

}  // namespace

std::string AmzDate(std::chrono::system_clock::time_point time) {
  const time_t t = std::chrono::system_clock::to_time_t(time);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buffer[32];
  const size_t n = strftime(buffer, sizeof(buffer), "%Y%m%dT%H%M%SZ", &tm);
  return std::string(buffer, n);
}

std::string CanonicalUri(std::string_view url_path) {
  if (url_path.empty()) return "/";
  return http::PercentEncode(http::PercentDecode(url_path), /*keep_slash=*/true);
}

std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    pairs.emplace_back(http::PercentEncode(http::PercentDecode(name), false),
                       http::PercentEncode(http::PercentDecode(value), false));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

CanonicalHeaderList CanonicalizeHeaders(const http::Headers& headers) {
  std::map<std::string, std::string> merged;  // sorted by lowercase name
  for (const auto& field : headers.fields()) {
    std::string name = AsciiLower(field.name);
    if (std::find(std::begin(kUnsignedHeaders), std::end(kUnsignedHeaders), name) !=
        std::end(kUnsignedHeaders)) {
      continue;
    }
    auto [it, fresh] = merged.try_emplace(std::move(name), CollapseAsciiWhitespace(field.value));
    if (!fresh) it->second += "," + CollapseAsciiWhitespace(field.value);
  }
  CanonicalHeaderList out;
  for (const auto& [name, value] : merged) {
    out.canonical += name + ":" + value + "\n";
    if (!out.signed_headers.empty()) out.signed_headers += ';';
    out.signed_headers += name;
  }
  return out;
}

Result<std::string> CanonicalRequest(const http::Request& request, std::string_view payload_hash) {
  FERRY_ASSIGN_OR_RETURN(UrlParts parts, SplitUrl(request.url));
  const CanonicalHeaderList headers = CanonicalizeHeaders(request.headers);
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}", request.method, CanonicalUri(parts.path),
                     CanonicalQuery(parts.query), headers.canonical, headers.signed_headers,
                     payload_hash);
}

std::string CredentialScope(std::string_view amz_date, std::string_view region,
                            std::string_view service) {
  return fmt::format("{}/{}/{}/aws4_request", amz_date.substr(0, 8), region, service);
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  return fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope, Sha256Hex(canonical_request));
}

std::string SigningKey(std::string_view secret, std::string_view date, std::string_view region,
                       std::string_view service) {
  const std::string k_date = HmacSha256("AWS4" + std::string(secret), date);
  const std::string k_region = HmacSha256(k_date, region);
  const std::string k_service = HmacSha256(k_region, service);
  return HmacSha256(k_service, "aws4_request");
}

SigV4Signer::SigV4Signer(AwsCredentials credentials, std::string region, std::string service)
    : credentials_(std::move(credentials)),
      region_(std::move(region)),
      service_(std::move(service)) {}

Status SigV4Signer::Sign(http::Request& request, std::string_view payload_hash,
                         std::chrono::system_clock::time_point now) const {
  if (anonymous()) return Status::Ok();
  FERRY_ASSIGN_OR_RETURN(UrlParts parts, SplitUrl(request.url));
  // What is signed must be what is sent: set every header the signature covers explicitly.
  if (!request.headers.Get("Host")) request.headers.Set("Host", HostHeader(parts));
  const std::string amz_date = AmzDate(now);
  request.headers.Set("x-amz-date", amz_date);
  request.headers.Set("x-amz-content-sha256", std::string(payload_hash));
  if (!credentials_.session_token.empty()) {
    request.headers.Set("x-amz-security-token", credentials_.session_token);
  } else {
    request.headers.Remove("x-amz-security-token");
  }
  request.headers.Remove("Authorization");  // a re-signed retry

  FERRY_ASSIGN_OR_RETURN(std::string canonical, CanonicalRequest(request, payload_hash));
  const std::string scope = CredentialScope(amz_date, region_, service_);
  const std::string key =
      SigningKey(credentials_.secret_access_key, amz_date.substr(0, 8), region_, service_);
  const std::string signature = ToHex(HmacSha256(key, StringToSign(amz_date, scope, canonical)));
  request.headers.Set(
      "Authorization",
      fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
                  credentials_.access_key_id, scope,
                  CanonicalizeHeaders(request.headers).signed_headers, signature));
  return Status::Ok();
}

}  // namespace ferry::internal_s3
