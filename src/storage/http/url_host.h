// The host of a URL, and whether credentials may go to it in the clear: token and metadata
// endpoints named in configuration must be https, or plain http to this machine only.
//
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <string_view>

namespace ferry::http {

/// The host of an http(s) URL, without user info, port or brackets; "" when there is none.
std::string UrlHost(std::string_view url);

/// "localhost", "::1", or an IPv4 address in 127.0.0.0/8 - exactly, not a name that starts so.
bool IsLoopbackHost(std::string_view host);

/// True for an https:// URL, and for an http:// URL to a loopback host.
bool IsPrivateEndpoint(std::string_view url);

}  // namespace ferry::http
