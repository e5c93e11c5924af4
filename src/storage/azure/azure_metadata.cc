#include "storage/azure/azure_metadata.h"

#include <fmt/format.h>

#include "base/ascii.h"
#include "storage/azure/azure_auth.h"
#include "storage/http/http_date.h"
#include "storage/http/http_types.h"
#include "storage/http/resumable_get.h"
#include "storage/xml/xml_tree.h"

namespace ferry::internal_azure {

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
      info.mtime = http::ParseHttpDate(properties->ChildText("Last-Modified"));
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
