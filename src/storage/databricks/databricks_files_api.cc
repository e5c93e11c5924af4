#include "storage/databricks/databricks_files_api.h"

#include <fmt/format.h>

#include <initializer_list>
#include <nlohmann/json.hpp>

#include "storage/http/resumable_get.h"
#include "storage/http/url_encoding.h"

namespace ferry::internal_databricks {
namespace {

bool In(std::string_view code, std::initializer_list<std::string_view> codes) {
  for (std::string_view c : codes) {
    if (code == c) return true;
  }
  return false;
}

StatusCode CodeOf(std::string_view error_code, int http_status) {
  // A range past the end is what it is, whatever code the service files it under.
  if (http_status == 416) return StatusCode::kOutOfRange;
  if (In(error_code, {"NOT_FOUND", "RESOURCE_DOES_NOT_EXIST"})) return StatusCode::kNotFound;
  if (error_code == "UNAUTHENTICATED") return StatusCode::kUnauthenticated;
  if (error_code == "PERMISSION_DENIED") return StatusCode::kPermissionDenied;
  if (In(error_code, {"REQUEST_LIMIT_EXCEEDED", "TEMPORARILY_UNAVAILABLE", "INTERNAL_ERROR",
                      "DEADLINE_EXCEEDED", "ABORTED"})) {
    return StatusCode::kUnavailable;
  }
  if (In(error_code, {"ALREADY_EXISTS", "RESOURCE_ALREADY_EXISTS", "RESOURCE_CONFLICT"})) {
    return StatusCode::kFailedPrecondition;
  }
  if (In(error_code, {"INVALID_PARAMETER_VALUE", "BAD_REQUEST"})) {
    return StatusCode::kInvalidArgument;
  }
  if (http_status == 409) return StatusCode::kFailedPrecondition;  // a file or folder in the way
  return http::StatusCodeFromHttp(http_status);
}

std::optional<nlohmann::json> ParseObject(std::string_view body) {
  auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  return json;
}

std::string Text(const nlohmann::json& json, const char* key) {
  const auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string FilesUrl(std::string_view host, std::string_view path) {
  return fmt::format("{}/api/2.0/fs/files{}", host, http::PercentEncode(path, true));
}

std::string DirectoriesUrl(std::string_view host, std::string_view path,
                           std::string_view page_token, int page_size) {
  std::string url =
      fmt::format("{}/api/2.0/fs/directories{}", host, http::PercentEncode(path, true));
  char sep = '?';
  if (page_size > 0) {
    url += fmt::format("{}page_size={}", sep, page_size);
    sep = '&';
  }
  if (!page_token.empty()) {
    url += fmt::format("{}page_token={}", sep, http::PercentEncode(page_token, false));
  }
  return url;
}

Result<DirectoryPage> ParseDirectoryPage(std::string_view body, std::string_view name) {
  auto bad = [&](std::string_view why) {
    return DataLossError(fmt::format("{}: the directory listing {}", name, why));
  };
  const auto json = ParseObject(body);
  if (!json) return bad("is not a JSON object");
  DirectoryPage page;
  page.next_page_token = Text(*json, "next_page_token");
  const auto contents = json->find("contents");
  if (contents == json->end()) return page;  // an empty folder has no "contents"
  if (!contents->is_array()) return bad("has a \"contents\" that is not a list");
  for (const auto& item : *contents) {
    if (!item.is_object()) return bad("has an entry that is not an object");
    DirectoryEntry entry;
    entry.path = Text(item, "path");
    if (entry.path.empty() || !entry.path.starts_with('/'))
      return bad("has an entry without a path");
    while (entry.path.size() > 1 && entry.path.ends_with('/')) entry.path.pop_back();
    if (const auto d = item.find("is_directory"); d != item.end() && d->is_boolean()) {
      entry.is_directory = d->get<bool>();
    }
    if (const auto s = item.find("file_size"); s != item.end()) {
      if (!s->is_number_unsigned() && !s->is_number_integer()) {
        return bad(fmt::format("gives {} a file_size that is not a number", entry.path));
      }
      const auto size = s->get<int64_t>();
      if (size < 0) return bad(fmt::format("gives {} a negative file_size", entry.path));
      entry.size = static_cast<uint64_t>(size);
    }
    if (const auto m = item.find("last_modified"); m != item.end() && m->is_number_integer()) {
      entry.mtime =
          std::chrono::system_clock::time_point(std::chrono::milliseconds(m->get<int64_t>()));
    }
    page.entries.push_back(std::move(entry));
  }
  return page;
}

Status DatabricksErrorToStatus(const http::Response& response, std::string_view name,
                               std::string_view hint) {
  std::string code;
  std::string message;
  if (const auto json = ParseObject(response.body)) {
    code = Text(*json, "error_code");
    message = Text(*json, "message");
    message = message.substr(0, message.find_first_of("\r\n"));
  }
  // Some gateways answer with error_code "403" or "401": the HTTP status says as much.
  std::string detail = fmt::format("HTTP {}", response.status);
  if (!code.empty() && code != std::to_string(response.status)) detail += " " + code;
  if (!message.empty()) detail += ": " + message.substr(0, 300);
  return Status(CodeOf(code, response.status),
                fmt::format("{}: {}{}{}", name, detail, hint.empty() ? "" : " ", hint));
}

}  // namespace ferry::internal_databricks
