// What tests of token sources (Entra ID, Google) share: reading back the form a source posted,
// and a token endpoint's JSON reply. Test-only.
#pragma once

#include <algorithm>
#include <map>
#include <string>

#include "storage/http/http_types.h"
#include "storage/http/url_encoding.h"

namespace ferry::testing {

/// The fields of an application/x-www-form-urlencoded body, decoded.
inline std::map<std::string, std::string> FormFields(const std::string& body) {
  std::map<std::string, std::string> form;
  size_t start = 0;
  while (start <= body.size()) {
    const size_t amp = std::min(body.find('&', start), body.size());
    const std::string pair = body.substr(start, amp - start);
    const size_t eq = pair.find('=');
    form[http::FormDecode(pair.substr(0, eq))] = http::FormDecode(pair.substr(eq + 1));
    start = amp + 1;
  }
  return form;
}

/// A reply of `status` with `body` (JSON, by what the tests pass).
inline http::Response JsonReply(int status, std::string body) {
  return http::Response{status, {}, std::move(body)};
}

}  // namespace ferry::testing
