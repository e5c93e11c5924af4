#include "storage/s3/credential_process.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/subprocess.h"
#include "storage/http/http_date.h"

namespace ferry::internal_s3 {

Result<AwsCredentials> ParseCredentialProcessOutput(std::string_view output,
                                                    std::string_view context) {
  const auto json = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return DataLossError(fmt::format("{}: its output is not a JSON object", context));
  }
  if (const auto version = json.find("Version");
      version == json.end() || !version->is_number_integer() || version->get<int>() != 1) {
    return InvalidArgumentError(fmt::format(
        "{}: its output must have \"Version\": 1 (the only version there is)", context));
  }
  auto text = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  AwsCredentials c;
  c.access_key_id = text("AccessKeyId");
  c.secret_access_key = text("SecretAccessKey");
  c.session_token = text("SessionToken");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return DataLossError(
        fmt::format("{}: its output lacks AccessKeyId or SecretAccessKey", context));
  }
  if (const std::string expiration = text("Expiration"); !expiration.empty()) {
    c.expiration = http::ParseIso8601(expiration);
    if (!c.expiration) {
      return DataLossError(fmt::format("{}: its Expiration is not an ISO 8601 time", context));
    }
  }
  return c;
}

Result<AwsCredentials> RunCredentialProcess(std::string_view command, std::string_view where) {
  // The program only: its arguments, and NAME=VALUE words before it, may hold a secret.
  std::string_view rest = command;
  std::string_view program;
  while (!rest.empty()) {
    rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
    program = rest.substr(0, rest.find_first_of(" \t"));
    rest.remove_prefix(program.size());
    if (program.find('=') == std::string_view::npos) break;
    program = {};
  }
  const std::string context =
      fmt::format("credential_process of {} ({})", where, program.empty() ? "?" : program);
  auto run =
      RunSubprocess({"/bin/sh", "-c", std::string(command)}, std::chrono::seconds(60), 64 << 10);
  if (!run) return run.status().WithContext(context);
  if (run->exit_code != 0) {
    std::string first_line = run->err.substr(0, run->err.find_first_of("\r\n"));
    if (first_line.size() > 200) first_line.resize(200);
    return UnauthenticatedError(fmt::format("{}: exited with status {}{}", context, run->exit_code,
                                            first_line.empty() ? "" : ": " + first_line));
  }
  FERRY_ASSIGN_OR_RETURN(AwsCredentials c, ParseCredentialProcessOutput(run->out, context));
  c.source = fmt::format("credential_process ({})", where);
  return c;
}

}  // namespace ferry::internal_s3
