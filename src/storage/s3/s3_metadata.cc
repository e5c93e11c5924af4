#include "storage/s3/s3_metadata.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/ascii.h"
#include "storage/http/http_date.h"
#include "storage/http/resumable_get.h"
#include "storage/http/url_encoding.h"
#include "storage/s3/s3_endpoint.h"
#include "storage/s3/s3_errors.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_s3 {

Result<ListPage> ParseListObjectsV2(std::string_view xml, std::string_view url) {
  auto root = ParseXml(xml);
  if (!root) return root.status().WithContext(fmt::format("{}: listing", url));
  if (root->name != "ListBucketResult") {
    return DataLossError(fmt::format("{}: expected a ListBucketResult, got <{}>", url, root->name));
  }
  const bool url_encoded = root->ChildText("EncodingType") == "url";
  auto decode = [&](const std::string& s) { return url_encoded ? http::FormDecode(s) : s; };

  ListPage page;
  for (const XmlElement* contents : root->Children("Contents")) {
    ObjectInfo info;
    info.key = decode(contents->ChildText("Key"));
    const auto size = ParseUint(contents->ChildText("Size"));
    if (!size) {
      return DataLossError(
          fmt::format("{}: listing entry '{}' has no valid <Size>", url, info.key));
    }
    info.size = *size;
    info.etag = http::UnquoteEtag(contents->ChildText("ETag"));
    info.mtime = http::ParseIso8601(contents->ChildText("LastModified"));
    page.objects.push_back(std::move(info));
  }
  for (const XmlElement* common : root->Children("CommonPrefixes")) {
    page.prefixes.push_back(decode(common->ChildText("Prefix")));
  }
  if (root->ChildText("IsTruncated") == "true") {
    std::string token = root->ChildText("NextContinuationToken");
    if (token.empty()) {
      return DataLossError(
          fmt::format("{}: the listing is truncated but gives no NextContinuationToken", url));
    }
    page.next_token = std::move(token);
  }
  return page;
}

Result<std::string> ParseInitiateMultipartUpload(std::string_view xml, std::string_view url) {
  auto root = ParseXml(xml);
  if (!root) return root.status().WithContext(fmt::format("{}: CreateMultipartUpload", url));
  std::string id = root->ChildText("UploadId");
  if (root->name != "InitiateMultipartUploadResult" || id.empty()) {
    return DataLossError(fmt::format("{}: the CreateMultipartUpload reply has no UploadId", url));
  }
  return id;
}

std::string CompleteMultipartUploadXml(const std::vector<CompletedPart>& parts) {
  std::string xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  for (const auto& part : parts) {
    xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", part.number,
                       XmlEscape(part.etag));
  }
  xml += "</CompleteMultipartUpload>";
  return xml;
}

Status CheckCompleteMultipartUpload(std::string_view xml, std::string_view url) {
  // Servers differ in the name of the success document (S3: CompleteMultipartUploadResult; moto:
  // CompleteMultipartUploadResponse) and some send none: only an <Error> is a failure.
  // S3 keeps a long Complete's connection alive by sending spaces before the document, and an
  // XML declaration is only valid at the very start.
  const size_t start = xml.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return Status::Ok();
  xml.remove_prefix(start);
  auto root = ParseXml(xml);
  if (!root) return root.status().WithContext(fmt::format("{}: CompleteMultipartUpload", url));
  if (root->name != "Error") return Status::Ok();
  http::Response response;
  response.status = 200;
  response.body = std::string(xml);
  // An error inside a 200 is S3's way of failing late; InternalError and SlowDown there are
  // transient like anywhere else, and an unknown code is not a success.
  return S3ErrorToStatus(response, fmt::format("{} (CompleteMultipartUpload)", url));
}

}  // namespace ferry::internal_s3
