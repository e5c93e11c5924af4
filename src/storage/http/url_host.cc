#include "storage/http/url_host.h"

#include <arpa/inet.h>

namespace ferry::http {

std::string UrlHost(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  std::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  if (rest.starts_with('[')) return std::string(rest.substr(1, rest.find(']') - 1));
  return std::string(rest.substr(0, rest.find(':')));
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr address{};
  const std::string text(host);
  return inet_pton(AF_INET, text.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

bool IsPrivateEndpoint(std::string_view url) {
  if (url.starts_with("https://")) return true;
  return url.starts_with("http://") && IsLoopbackHost(UrlHost(url));
}

}  // namespace ferry::http
