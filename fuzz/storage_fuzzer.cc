// Fuzzes what ferry parses from the network and from users: S3 and Azure XML (listings,
// multipart replies, error bodies), URLs of every store, HTTP dates, Azure connection strings,
// redaction, and FileDataset listings (whose keys become local paths). The first byte picks
// the parser; any input must give a value or a Status - never a crash, a hang or an
// out-of-bounds read. Properties checked beyond "no crash":
//   - every credential-named query parameter of a URL comes out of RedactUrl as REDACTED;
//   - every key of an accepted listing is a safe relative path (it becomes a file under the
//     cache folder).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/format/index.h"
#include "files/file_listing.h"
#include "storage/azure/azure_config.h"
#include "storage/azure/azure_errors.h"
#include "storage/azure/azure_metadata.h"
#include "storage/http/http_date.h"
#include "storage/http/http_types.h"
#include "storage/http/url_encoding.h"
#include "storage/s3/s3_endpoint.h"
#include "storage/s3/s3_errors.h"
#include "storage/s3/s3_metadata.h"
#include "storage/xml/xml_tree.h"

namespace {

std::vector<std::string_view> QueryPairs(std::string_view url) {
  std::vector<std::string_view> pairs;
  const size_t q = url.find('?');
  if (q == std::string_view::npos) return pairs;
  std::string_view query = url.substr(q + 1);
  while (true) {
    const size_t amp = query.find('&');
    if (amp != 0 && !query.empty())
      pairs.push_back(query.substr(0, amp));  // "&&" and a trailing
                                              // "&" carry nothing
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return pairs;
}

bool IsSecretName(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "sig" || lower == "signature" || lower == "x-amz-signature" ||
         lower == "x-amz-security-token" || lower == "x-amz-credential" || lower == "token" ||
         lower == "access_token" || lower == "x-goog-signature" || lower == "x-goog-credential";
}

// Every credential-named query parameter of the input comes out as name=REDACTED, in place.
void CheckRedacted(std::string_view input) {
  const std::string redacted = ferry::http::RedactUrl(input);
  const auto in = QueryPairs(input);
  const auto out = QueryPairs(redacted);
  if (in.size() != out.size()) std::abort();
  for (size_t i = 0; i < in.size(); ++i) {
    const size_t eq = in[i].find('=');
    if (eq == std::string_view::npos || !IsSecretName(in[i].substr(0, eq))) continue;
    if (out[i] != std::string(in[i].substr(0, eq)) + "=REDACTED") std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 12) {
    case 0:
      (void)ferry::ParseXml(text);
      break;
    case 1:
      (void)ferry::internal_s3::ParseListObjectsV2(text, "s3://fuzz/");
      break;
    case 2:
      (void)ferry::internal_s3::ParseS3ErrorBody(text);
      break;
    case 3:
      (void)ferry::internal_s3::ParseInitiateMultipartUpload(text, "s3://fuzz/k");
      (void)ferry::internal_s3::CheckCompleteMultipartUpload(text, "s3://fuzz/k");
      break;
    case 4:
      (void)ferry::internal_azure::ParseListBlobs(text, "az://fuzz/");
      break;
    case 5: {
      ferry::http::Response response;
      response.status = 400 + static_cast<int>(size % 200);
      response.body = std::string(text);
      (void)ferry::internal_azure::AzureErrorToStatus(response, "az://fuzz/k");
      (void)ferry::internal_s3::S3ErrorToStatus(response, "s3://fuzz/k");
      break;
    }
    case 6:
      (void)ferry::internal_s3::SplitUrl(text);
      (void)ferry::internal_s3::ParseBucketUrl(text, "s3");
      (void)ferry::http::PercentDecode(text);
      break;
    case 7:
      (void)ferry::internal_azure::ParseAzureUrl(
          text, [](std::string_view) -> std::optional<std::string> { return std::nullopt; });
      break;
    case 8:
      (void)ferry::internal_azure::ParseConnectionString(text);
      break;
    case 9:
      (void)ferry::http::ParseHttpDate(text);
      (void)ferry::http::ParseIso8601(text);
      break;
    case 10:
      CheckRedacted(text);
      break;
    case 11: {
      auto listing = ferry::internal_files::ParseListing(text, "fuzz");
      if (listing) {
        for (const auto& file : listing->files) {
          if (!ferry::ValidateBasename(file.path).ok()) std::abort();
        }
      }
      break;
    }
  }
  return 0;
}
