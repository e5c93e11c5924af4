// What S3 says about objects, read from response headers and XML bodies, and the one XML body
// ferry sends (the part list of CompleteMultipartUpload).
//
// Listings (ListObjectsV2, https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html)
// are requested with encoding-type=url, because a key may hold characters XML 1.0 cannot carry.
// A server that honours it says <EncodingType>url</EncodingType> and form-encodes Key, Prefix
// and the common prefixes; one that ignores it (some S3-compatible servers) does not, and the
// reply is then taken literally. Decoding follows the reply, never the request.
//
// Thread-safety: reentrant functions over values.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/result.h"
#include "ferry/storage/object_store.h"
#include "storage/http/http_types.h"

namespace ferry::internal_s3 {

struct ListPage {
  std::vector<ObjectInfo> objects;
  std::vector<std::string> prefixes;
  /// NextContinuationToken when the listing is truncated, else nullopt.
  std::optional<std::string> next_token;
};

/// One ListBucketResult page. kDataLoss naming `url` for malformed XML, a missing or bad Size,
/// or a truncated page without a continuation token.
Result<ListPage> ParseListObjectsV2(std::string_view xml, std::string_view url);

/// The UploadId of an InitiateMultipartUploadResult.
Result<std::string> ParseInitiateMultipartUpload(std::string_view xml, std::string_view url);

struct CompletedPart {
  int number = 0;    // 1-based
  std::string etag;  // as the UploadPart reply's ETag header gave it (quotes included)
};

/// <CompleteMultipartUpload> with the parts in the order given (ascending part numbers).
std::string CompleteMultipartUploadXml(const std::vector<CompletedPart>& parts);

/// A CompleteMultipartUpload reply with status 200 can still have failed: S3 sends the status
/// line before it knows and reports an error in the body. The mapped error for an <Error>;
/// kDataLoss for malformed XML; OK for anything else (the success document's name varies).
Status CheckCompleteMultipartUpload(std::string_view xml, std::string_view url);

}  // namespace ferry::internal_s3
