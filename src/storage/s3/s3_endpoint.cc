#include "storage/s3/s3_endpoint.h"

#include <fmt/format.h>

#include <cctype>

#include "base/ascii.h"
#include "storage/http/url_encoding.h"

namespace ferry::internal_s3 {
namespace {

bool LooksLikeIpv4(std::string_view s) {
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dots == 3;
}

}  // namespace

Result<UrlParts> SplitUrl(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return InvalidArgumentError(fmt::format("'{}' is not an absolute URL", url.substr(0, 200)));
  }
  UrlParts parts;
  parts.scheme = url.substr(0, sep);
  std::string_view rest = url.substr(sep + 3);
  const size_t path_start = rest.find_first_of("/?#");
  parts.authority = rest.substr(0, path_start);
  if (parts.authority.empty()) {
    return InvalidArgumentError(fmt::format("URL '{}' has no host", url.substr(0, 200)));
  }
  rest = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  rest = rest.substr(0, rest.find('#'));
  const size_t q = rest.find('?');
  parts.path = rest.substr(0, q);
  if (q != std::string_view::npos) parts.query = rest.substr(q + 1);
  return parts;
}

std::string HostHeader(const UrlParts& parts) {
  std::string_view authority = parts.authority;
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  std::string host = AsciiLower(authority);
  const std::string scheme = AsciiLower(parts.scheme);
  if ((scheme == "https" && host.ends_with(":443")) ||
      (scheme == "http" && host.ends_with(":80"))) {
    host.resize(host.rfind(':'));
  }
  return host;
}

Result<BucketAndKey> ParseBucketUrl(std::string_view url, std::string_view scheme) {
  const std::string prefix = std::string(scheme) + "://";
  if (url.size() < prefix.size() || AsciiLower(url.substr(0, prefix.size())) != prefix) {
    return InvalidArgumentError(fmt::format("'{}' is not a {} URL", url, prefix));
  }
  std::string_view rest = url.substr(prefix.size());
  const size_t slash = rest.find('/');
  BucketAndKey out;
  out.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) out.key = std::string(rest.substr(slash + 1));
  if (out.bucket.empty()) {
    return InvalidArgumentError(fmt::format("{}: the URL names no bucket", url));
  }
  // The most permissive rule: stricter ones apply once the endpoint is known.
  FERRY_RETURN_IF_ERROR(ValidateBucketName(out.bucket, BucketNaming::kPermissive)
                            .WithContext(fmt::format("{}", url)));
  return out;
}

Status ValidateBucketName(std::string_view bucket, BucketNaming naming) {
  auto bad = [&](std::string_view rule) {
    return InvalidArgumentError(fmt::format("invalid bucket name '{}': {}", bucket, rule));
  };
  if (naming == BucketNaming::kPermissive) {
    if (bucket.empty() || bucket.size() > 255) return bad("it must have 1 to 255 characters");
    for (unsigned char c : bucket) {
      if (std::isalnum(c) == 0 && c != '.' && c != '_' && c != '-') {
        return bad("only letters, digits, '.', '_' and '-' may appear");
      }
    }
    return Status::Ok();
  }
  const bool gcs = naming == BucketNaming::kGcs;
  const bool dotted = bucket.find('.') != std::string_view::npos;
  const size_t max = gcs && dotted ? 222 : 63;
  if (bucket.size() < 3 || bucket.size() > max) {
    return bad(fmt::format("it must have 3 to {} characters", max));
  }
  for (unsigned char c : bucket) {
    const bool ok =
        std::islower(c) != 0 || std::isdigit(c) != 0 || c == '.' || c == '-' || (gcs && c == '_');
    if (!ok) {
      return bad(gcs ? "only lowercase letters, digits, '.', '_' and '-' may appear"
                     : "only lowercase letters, digits, '.' and '-' may appear");
    }
  }
  if (std::isalnum(static_cast<unsigned char>(bucket.front())) == 0 ||
      std::isalnum(static_cast<unsigned char>(bucket.back())) == 0) {
    return bad("it must begin and end with a letter or digit");
  }
  if (bucket.find("..") != std::string_view::npos) return bad("it must not contain '..'");
  if (LooksLikeIpv4(bucket)) return bad("it must not look like an IP address");
  return Status::Ok();
}

std::string S3Endpoint::ToString() const {
  return fmt::format("{}://{}{} ({})", scheme, authority, base_path,
                     style == AddressingStyle::kPath ? "path style" : "virtual-hosted");
}

Result<S3Endpoint> ParseEndpointUrl(std::string_view url) {
  FERRY_ASSIGN_OR_RETURN(UrlParts parts, SplitUrl(url));
  S3Endpoint e;
  e.scheme = AsciiLower(parts.scheme);
  if (e.scheme != "http" && e.scheme != "https") {
    return InvalidArgumentError(
        fmt::format("endpoint URL '{}' must start with http:// or https://", url));
  }
  if (!parts.query.empty()) {
    return InvalidArgumentError(fmt::format("endpoint URL '{}' must not have a query", url));
  }
  e.authority = AsciiLower(parts.authority);
  std::string_view path = parts.path;
  while (path.ends_with('/')) path.remove_suffix(1);
  e.base_path = std::string(path);
  e.style = AddressingStyle::kPath;
  e.custom = true;
  return e;
}

S3Endpoint AwsEndpoint(std::string_view region) {
  S3Endpoint e;
  e.scheme = "https";
  e.authority = fmt::format("s3.{}.amazonaws.com", region);
  e.style = AddressingStyle::kVirtualHosted;
  e.custom = false;
  return e;
}

Result<S3Endpoint> ResolveS3Endpoint(std::string_view bucket, std::string_view region,
                                     const EnvLookup& env) {
  S3Endpoint endpoint;
  std::string source;
  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "S3_ENDPOINT_URL"}) {
    if (auto url = env(name)) {
      auto parsed = ParseEndpointUrl(*url);
      if (!parsed) return parsed.status().WithContext(name);
      endpoint = *std::move(parsed);
      source = name;
      break;
    }
  }
  if (source.empty()) {
    endpoint = AwsEndpoint(region);
    // A dotted name would not match the certificate's *.s3.REGION.amazonaws.com.
    if (bucket.find('.') != std::string_view::npos) endpoint.style = AddressingStyle::kPath;
  }
  const std::string style = env("FERRY_S3_ADDRESSING").value_or("");
  if (style == "path") {
    endpoint.style = AddressingStyle::kPath;
  } else if (style == "virtual") {
    endpoint.style = AddressingStyle::kVirtualHosted;
  } else if (!style.empty() && style != "auto") {
    return InvalidArgumentError(
        fmt::format("FERRY_S3_ADDRESSING is '{}'; expected path, virtual or auto", style));
  }
  return endpoint;
}

std::string BucketUrl(const S3Endpoint& endpoint, std::string_view bucket) {
  if (endpoint.style == AddressingStyle::kVirtualHosted) {
    return fmt::format("{}://{}.{}{}", endpoint.scheme, bucket, endpoint.authority,
                       endpoint.base_path);
  }
  return fmt::format("{}://{}{}/{}", endpoint.scheme, endpoint.authority, endpoint.base_path,
                     bucket);
}

std::string ObjectUrl(const S3Endpoint& endpoint, std::string_view bucket, std::string_view key) {
  return BucketUrl(endpoint, bucket) + "/" + http::PercentEncode(key, /*keep_slash=*/true);
}

}  // namespace ferry::internal_s3
