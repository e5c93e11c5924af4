// The Databricks Files API 2.0, as the volume store speaks it: request URLs, the directory
// listing's JSON, and error replies as Status.
//
//   HEAD   /api/2.0/fs/files{path}                       Content-Length, Last-Modified
//   GET    /api/2.0/fs/files{path}                       the bytes; honours Range
//   PUT    /api/2.0/fs/files{path}?overwrite=true        the body is the file (at most 5 GiB);
//                                                        missing parent folders are created
//   DELETE /api/2.0/fs/files{path}
//   GET    /api/2.0/fs/directories{path}[?page_token=T]  {"contents": [{"path", "is_directory",
//                                                        "file_size", "last_modified" (ms since
//                                                        1970), "name"}], "next_page_token"}
// {path} is the absolute path (/Volumes/<catalog>/<schema>/<volume>/...), each byte outside
// the unreserved set percent-encoded, '/' kept.
//
// Errors come as JSON {"error_code": "NOT_FOUND", "message": "..."}. The code decides the Status
// when it is one we know, the HTTP status otherwise (416, a range past the end, always
// kOutOfRange):
//   NOT_FOUND, RESOURCE_DOES_NOT_EXIST, 404                        kNotFound
//   UNAUTHENTICATED, 401                                           kUnauthenticated
//   PERMISSION_DENIED, 403                                         kPermissionDenied
//   REQUEST_LIMIT_EXCEEDED, TEMPORARILY_UNAVAILABLE, INTERNAL_ERROR,
//     DEADLINE_EXCEEDED, ABORTED, 408, 429, 5xx                    kUnavailable (retried)
//   ALREADY_EXISTS, RESOURCE_ALREADY_EXISTS, RESOURCE_CONFLICT, 409 kFailedPrecondition
//   INVALID_PARAMETER_VALUE, BAD_REQUEST, 400                      kInvalidArgument
// The message is "<ferry URL>: HTTP <status> <error_code>: <first line of message><hint>".
//
// Thread-safety: reentrant functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "storage/http/http_types.h"

namespace ferry::internal_databricks {

/// The largest file one PUT may upload.
inline constexpr uint64_t kMaxUploadBytes = uint64_t{5} << 30;

/// {host}/api/2.0/fs/files{path}.
std::string FilesUrl(std::string_view host, std::string_view path);

/// {host}/api/2.0/fs/directories{path}, with page_token and page_size when given (0: none).
std::string DirectoriesUrl(std::string_view host, std::string_view path,
                           std::string_view page_token, int page_size);

struct DirectoryEntry {
  std::string path;  // absolute, as the service gives it; folders without a trailing '/'
  bool is_directory = false;
  uint64_t size = 0;
  std::optional<std::chrono::system_clock::time_point> mtime;
};

struct DirectoryPage {
  std::vector<DirectoryEntry> entries;
  std::string next_page_token;  // empty on the last page
};

/// The JSON of one listing page; kDataLoss naming `name` when it is not one.
Result<DirectoryPage> ParseDirectoryPage(std::string_view body, std::string_view name);

/// An error reply (status >= 300) as a Status naming `name` (a dbfs:/ URL), with `hint` after
/// the service's message (what to check for a 401 or 403).
Status DatabricksErrorToStatus(const http::Response& response, std::string_view name,
                               std::string_view hint = {});

}  // namespace ferry::internal_databricks
