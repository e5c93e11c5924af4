#include "storage/azure/azure_metadata.h"

#include <fmt/format.h>

#include <array>
#include <ctime>

#include "base/ascii.h"
#include "storage/azure/azure_auth.h"
#include "storage/http/http_types.h"
#include "storage/http/resumable_get.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_azure {

std::optional<std::chrono::system_clock::time_point> ParseHttpDate(std::string_view text) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  // "Www, DD Mmm YYYY HH:MM:SS GMT": fixed columns.
  if (text.size() != 29 || text.substr(3, 2) != ", " || text.substr(25) != " GMT" ||
      text[7] != ' ' || text[11] != ' ' || text[16] != ' ' || text[19] != ':' || text[22] != ':') {
    return std::nullopt;
  }
  const auto day = ParseUint(text.substr(5, 2));
  const auto year = ParseUint(text.substr(12, 4));
  const auto hour = ParseUint(text.substr(17, 2));
  const auto minute = ParseUint(text.substr(20, 2));
  const auto second = ParseUint(text.substr(23, 2));
  int month = -1;
  for (int i = 0; i < 12; ++i) {
    if (text.substr(8, 3) == kMonths[i]) month = i;
  }
  if (!day || !year || !hour || !minute || !second || month < 0 || *day < 1 || *day > 31 ||
      *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = static_cast<int>(*year) - 1900;
  tm.tm_mon = month;
  tm.tm_mday = static_cast<int>(*day);
  tm.tm_hour = static_cast<int>(*hour);
  tm.tm_min = static_cast<int>(*minute);
  tm.tm_sec = static_cast<int>(*second);
  return http::TimeFromUtc(tm);
}

Result<ObjectInfo> ObjectInfoFromHeaders(const http::Headers& headers, std::string_view key,
                                         std::string_view url) {
  ObjectInfo info;
  info.key = std::string(key);
  const auto length = headers.Get("Content-Length");
  const auto size = length ? ParseUint(*length) : std::nullopt;
  if (!size) {
    return DataLossError(fmt::format("{}: the response has no valid Content-Length", url));
  }
  info.size = *size;
  if (auto etag = headers.Get("ETag")) info.etag = http::UnquoteEtag(*etag);
  if (auto modified = headers.Get("Last-Modified")) info.mtime = ParseHttpDate(*modified);
  return info;
}

Result<ListBlobsPage> ParseListBlobs(std::string_view xml, std::string_view url) {
  auto root = ParseXml(xml);
  if (!root) return root.status().WithContext(fmt::format("{}: List Blobs response", url));
  if (root->name != "EnumerationResults") {
    return DataLossError(
        fmt::format("{}: expected <EnumerationResults>, got <{}>", url, root->name));
  }
  ListBlobsPage page;
  page.next_marker = root->ChildText("NextMarker");
  const XmlElement* blobs = root->Child("Blobs");
  if (blobs == nullptr) return page;
  for (const XmlElement& entry : blobs->children) {
    if (entry.name == "BlobPrefix") {
      page.prefixes.push_back(entry.ChildText("Name"));
      continue;
    }
    if (entry.name != "Blob") continue;
    const XmlElement* properties = entry.Child("Properties");
    if (properties != nullptr && properties->ChildText("ResourceType") == "directory") continue;
    ObjectInfo info;
    info.key = entry.ChildText("Name");
    if (properties != nullptr) {
      const std::string length = properties->ChildText("Content-Length");
      const auto size = ParseUint(length);
      if (!size) {
        return DataLossError(
            fmt::format("{}: blob '{}' has an invalid Content-Length '{}'", url, info.key, length));
      }
      info.size = *size;
      info.etag = http::UnquoteEtag(properties->ChildText("Etag"));
      info.mtime = ParseHttpDate(properties->ChildText("Last-Modified"));
    }
    page.objects.push_back(std::move(info));
  }
  return page;
}

std::string BlockId(std::string_view upload_id, size_t index) {
  return Base64Encode(fmt::format("ferry-{}-{:06}", upload_id, index));
}

std::string BlockListXml(const std::vector<std::string>& block_ids) {
  std::string xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
  for (const std::string& id : block_ids) {
    xml += fmt::format("<Latest>{}</Latest>", XmlEscape(id));
  }
  xml += "</BlockList>";
  return xml;
}

}  // namespace ferry::internal_azure
