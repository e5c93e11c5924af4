// What Azure Blob responses say about blobs, and the XML bodies ferry sends: List Blobs pages,
// block ids and the Put Block List body. (A HEAD's headers are read by
// http::ObjectInfoFromHeaders.)
//
// List Blobs (GET <container>?restype=container&comp=list) answers
//   <EnumerationResults ...><Prefix/><Marker/><MaxResults/><Delimiter/>
//     <Blobs>
//       <Blob><Name>a/b</Name><Properties><Last-Modified>Tue, 07 Jan 2025 12:34:56 GMT
//         </Last-Modified><Etag>0x8DC...</Etag><Content-Length>12</Content-Length>...
//         </Properties></Blob>
//       <BlobPrefix><Name>a/c/</Name></BlobPrefix>          (with a delimiter only)
//     </Blobs>
//     <NextMarker>opaque</NextMarker>                        (empty on the last page)
//   </EnumerationResults>
// Directory entries of accounts with a hierarchical namespace (Properties/ResourceType
// "directory") are folders, not objects, and are left out.
//
// Block ids: Put Block List requires every id of one blob to have the same length before
// base64; ids are "ferry-<16 hex upload id>-<6 digit index>" so that blocks of two uploads of one
// blob racing each other never mix.
//
// Thread-safety: reentrant.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "storage/http/http_types.h"

namespace ferry::internal_azure {

struct ListBlobsPage {
  std::vector<ObjectInfo> objects;    // in the order listed
  std::vector<std::string> prefixes;  // BlobPrefix names, ending in the delimiter
  std::string next_marker;            // empty: the last page
};

/// Parses one List Blobs response. kDataLoss naming `url` for a body that is not a listing.
Result<ListBlobsPage> ParseListBlobs(std::string_view xml, std::string_view url);

/// The base64 block id of block `index` of the upload `upload_id` (16 hex digits).
std::string BlockId(std::string_view upload_id, size_t index);

/// <?xml ...?><BlockList><Latest>id</Latest>...</BlockList>, in the order given.
std::string BlockListXml(const std::vector<std::string>& block_ids);

}  // namespace ferry::internal_azure
