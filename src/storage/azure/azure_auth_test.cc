#include "storage/azure/azure_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "storage/azure/azure_store_testutil.h"

namespace ferry::internal_azure {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

// The emulator's published account key (not a secret) signs every vector below.
using azure_test::kDate;
using azure_test::kDevKey;
constexpr std::string_view kBase = "https://myaccount.blob.core.windows.net";

std::string DecodedKey() { return Base64Decode(kDevKey).value(); }

http::Request MakeRequest(std::string method, std::string url) {
  http::Request request;
  request.method = std::move(method);
  request.url = std::move(url);
  request.headers.Set("x-ms-date", std::string(kDate));
  request.headers.Set("x-ms-version", "2021-08-06");
  return request;
}

TEST(Base64, RoundTripsAndRejectsMalformedText) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("\xfb\xff"), "+/8=");
  EXPECT_EQ(Base64Decode("Zg==").value(), "f");
  EXPECT_EQ(Base64Decode("Zm8=").value(), "fo");
  EXPECT_EQ(Base64Decode("+/8=").value(), "\xfb\xff");
  EXPECT_EQ(Base64Decode("").value(), "");
  EXPECT_EQ(DecodedKey().size(), 64u);
  EXPECT_FALSE(Base64Decode("Zg="));  // length not a multiple of 4
  EXPECT_FALSE(Base64Decode("Z===")) << "too much padding";
  EXPECT_FALSE(Base64Decode("Zg=a"));  // data after padding
  EXPECT_FALSE(Base64Decode("Zm 9"));  // whitespace
  EXPECT_FALSE(Base64Decode("Zm-_"));  // URL-safe alphabet
  EXPECT_FALSE(Base64Decode("not a key"));
}

// Expected strings and signatures below come from Debian's azure-storage-blob 12.15 signing the
// same requests (same headers, x-ms-date "Tue, 07 Jan 2025 12:34:56 GMT", x-ms-version
// 2021-08-06, the key above), printed by:
//
//   /usr/bin/python3 - <<'EOF'
//   from azure.core.pipeline import PipelineRequest, PipelineContext
//   from azure.core.pipeline.transport import HttpRequest
//   from azure.storage.blob._shared.authentication import SharedKeyCredentialPolicy
//   KEY, DATE = "<kDevKey above>", "Tue, 07 Jan 2025 12:34:56 GMT"
//   def sign(method, url, headers, account="myaccount"):
//       p = SharedKeyCredentialPolicy(account, KEY)
//       add = p._add_authorization_header
//       p._add_authorization_header = lambda r, sts: (print(repr(sts)), add(r, sts))
//       h = {"x-ms-date": DATE, "x-ms-version": "2021-08-06", **headers}
//       req = HttpRequest(method, url, headers=h)
//       p.on_request(PipelineRequest(req, PipelineContext(None)))
//       print(req.headers["Authorization"])
//   sign("GET", "https://myaccount.blob.core.windows.net/mycontainer/dir/file.bin",
//        {"x-ms-range": "bytes=100-199"})   # ... and so on for each vector
//   EOF
//
// The SDK sends ranges as x-ms-range and so leaves the standard Range slot empty (it looks up a
// 'byte_range' header); for the request with a Range header the policy's header list had 'range'
// in that slot, as the REST documentation specifies. Bodies are given as Content-Length headers.
struct Vector {
  const char* name;
  http::Request request;
  std::string account;
  std::string string_to_sign;
  std::string authorization;
};

std::vector<Vector> PythonVectors() {
  std::vector<Vector> v;
  {
    auto r = MakeRequest("GET", std::string(kBase) + "/mycontainer/dir/file.bin");
    r.headers.Set("x-ms-range", "bytes=100-199");
    v.push_back({"get with x-ms-range", r, "myaccount",
                 "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\n"
                 "x-ms-range:bytes=100-199\nx-ms-version:2021-08-06\n"
                 "/myaccount/mycontainer/dir/file.bin",
                 "SharedKey myaccount:Ergtzcit5hECO3kWPJeL9ulchOZV4h2QLisM3Vg6yC4="});
  }
  {
    auto r = MakeRequest("GET", std::string(kBase) + "/mycontainer/dir/file.bin");
    r.headers.Set("Range", "bytes=100-");
    r.headers.Set("If-Match", "\"0x8DC0123456789AB\"");
    v.push_back({"get with Range and If-Match", r, "myaccount",
                 "GET\n\n\n\n\n\n\n\n\"0x8DC0123456789AB\"\n\n\nbytes=100-\n"
                 "x-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\nx-ms-version:2021-08-06\n"
                 "/myaccount/mycontainer/dir/file.bin",
                 "SharedKey myaccount:aGbS23+s/ppb04BougYdLFKfYtbPUX9ynOyU8np0SUY="});
  }
  {
    auto r = MakeRequest(
        "PUT", std::string(kBase) +
                   "/mycontainer/big.bin?comp=block&blockid=ZmVycnktMDAwMDAx%2B%2F%3D%3D");
    r.body = ByteSource::FromView("");  // the size is what is signed; see below
    r.body->size = 1024;
    v.push_back({"put block", r, "myaccount",
                 "PUT\n\n\n1024\n\n\n\n\n\n\n\n\nx-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\n"
                 "x-ms-version:2021-08-06\n/myaccount/mycontainer/big.bin\n"
                 "blockid:ZmVycnktMDAwMDAx+/==\ncomp:block",
                 "SharedKey myaccount:PFYNrF3q7Z/iD4X6JEF0b1qVcX7SV44mo+TkXVPrGnU="});
  }
  {
    auto r = MakeRequest("PUT", std::string(kBase) + "/mycontainer/big.bin?comp=blocklist");
    r.headers.Set("Content-Type", "application/xml");
    r.body = ByteSource::FromView("");
    r.body->size = 120;
    v.push_back({"put block list", r, "myaccount",
                 "PUT\n\n\n120\n\napplication/xml\n\n\n\n\n\n\n"
                 "x-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\nx-ms-version:2021-08-06\n"
                 "/myaccount/mycontainer/big.bin\ncomp:blocklist",
                 "SharedKey myaccount:4TCDLTYIIGGw0u6IRd5sKkFDDLKOCcbFo2rVNbXsELw="});
  }
  {
    auto r = MakeRequest("PUT", std::string(kBase) + "/mycontainer/empty");
    r.headers.Set("x-ms-blob-type", "BlockBlob");
    r.body = ByteSource::FromView("");  // Content-Length 0 is signed as empty
    v.push_back({"put empty blob", r, "myaccount",
                 "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-blob-type:BlockBlob\n"
                 "x-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\nx-ms-version:2021-08-06\n"
                 "/myaccount/mycontainer/empty",
                 "SharedKey myaccount:OQCaal62VqpST2qWia8ZygGyARpZces+J11GBdhRvqA="});
  }
  {
    auto r = MakeRequest("GET", std::string(kBase) +
                                    "/mycontainer?restype=container&comp=list&prefix=a%2Fb%20c&"
                                    "delimiter=%2F&marker=2%21tok&maxresults=2");
    v.push_back({"list with prefix, delimiter, marker", r, "myaccount",
                 "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\n"
                 "x-ms-version:2021-08-06\n/myaccount/mycontainer\ncomp:list\ndelimiter:/\n"
                 "marker:2!tok\nmaxresults:2\nprefix:a/b c\nrestype:container",
                 "SharedKey myaccount:fqadP2r6QZeaNryWo1eulUPu9RGhVbWz6DrmPwVRhd4="});
  }
  {
    auto r = MakeRequest("HEAD", std::string(kBase) + "/mycontainer/dir/file.bin");
    v.push_back({"head", r, "myaccount",
                 "HEAD\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\n"
                 "x-ms-version:2021-08-06\n/myaccount/mycontainer/dir/file.bin",
                 "SharedKey myaccount:Fpkg6p5j4C99TVqbteHJLvsCNEXTOZx+7iMvDr63pdE="});
  }
  {
    auto r = MakeRequest("DELETE", std::string(kBase) + "/mycontainer/dir/file.bin");
    r.headers.Set("x-ms-delete-snapshots", "include");
    v.push_back({"delete", r, "myaccount",
                 "DELETE\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\n"
                 "x-ms-delete-snapshots:include\nx-ms-version:2021-08-06\n"
                 "/myaccount/mycontainer/dir/file.bin",
                 "SharedKey myaccount:PFZ/48bzWBoEDEOkagInBFvbPJLTRpK9vAcRBdQGzbI="});
  }
  {
    // Blob "dir one/naïve 文件+%#?.txt": the path is signed as sent, percent-encoded.
    auto r =
        MakeRequest("GET", std::string(kBase) +
                               "/mycontainer/dir%20one/na%C3%AFve%20%E6%96%87%E4%BB%B6%2B%25%23"
                               "%3F.txt");
    v.push_back({"blob name with spaces and unicode", r, "myaccount",
                 "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\n"
                 "x-ms-version:2021-08-06\n/myaccount/mycontainer/dir%20one/"
                 "na%C3%AFve%20%E6%96%87%E4%BB%B6%2B%25%23%3F.txt",
                 "SharedKey myaccount:FsWdeue1R31NPXXa286j4pRgs3/ez82S9bJXQyM500c="});
  }
  {
    // Path-style (emulator) endpoint: the account appears twice in the resource.
    auto r = MakeRequest("PUT", "http://127.0.0.1:10000/devstoreaccount1/mycontainer/a%20b.txt");
    r.headers.Set("x-ms-blob-type", "BlockBlob");
    r.body = ByteSource::FromView("hello world");
    v.push_back({"emulator put blob", r, "devstoreaccount1",
                 "PUT\n\n\n11\n\n\n\n\n\n\n\n\nx-ms-blob-type:BlockBlob\n"
                 "x-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\nx-ms-version:2021-08-06\n"
                 "/devstoreaccount1/devstoreaccount1/mycontainer/a%20b.txt",
                 "SharedKey devstoreaccount1:HAnCABFSMYst58GqW9Ky0ANrr7/DJ3kCNwZH5jdaFVM="});
  }
  return v;
}

TEST(SharedKey, MatchesTheAzureSdk) {
  for (Vector& v : PythonVectors()) {
    SCOPED_TRACE(v.name);
    EXPECT_EQ(SharedKeyStringToSign(v.request, v.account), v.string_to_sign);
    http::Request signed_request = v.request;
    SignSharedKey(signed_request, v.account, DecodedKey(), std::chrono::system_clock::now());
    EXPECT_EQ(signed_request.headers.Get("Authorization").value_or(""), v.authorization);
    // The pinned x-ms-date was kept, not replaced by "now".
    EXPECT_EQ(signed_request.headers.Get("x-ms-date").value_or(""), kDate);
  }
}

TEST(SharedKey, ContentLengthHeaderWinsOverBodySize) {
  // A body's size is what the transport sends as Content-Length, but an explicit header (which
  // the SDK sets) is signed as written.
  auto r = MakeRequest("PUT", std::string(kBase) + "/c/b");
  r.headers.Set("Content-Length", "7");
  EXPECT_THAT(SharedKeyStringToSign(r, "myaccount"), ::testing::StartsWith("PUT\n\n\n7\n"));
}

// Canonicalized resources from Microsoft's "Authorize with Shared Key" page
// (https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key, "Shared Key
// format for 2009-09-19 and later" examples), and its canonicalized-headers example.
TEST(SharedKey, MatchesMicrosoftDocumentedExamples) {
  struct Example {
    std::string url;
    std::string resource;
  };
  const Example examples[] = {
      {"http://myaccount.blob.core.windows.net/mycontainer?restype=container&comp=metadata",
       "/myaccount/mycontainer\ncomp:metadata\nrestype:container"},
      {"http://myaccount.blob.core.windows.net/mycontainer?restype=container&comp=list&include="
       "snapshots&include=metadata&include=uncommittedblobs",
       "/myaccount/mycontainer\ncomp:list\ninclude:metadata,snapshots,uncommittedblobs\n"
       "restype:container"},
      // The secondary endpoint signs with the account name, not the host's label.
      {"https://myaccount-secondary.blob.core.windows.net/mycontainer/myblob",
       "/myaccount/mycontainer/myblob"},
  };
  for (const Example& e : examples) {
    http::Request r;
    r.method = "GET";
    r.url = e.url;
    r.headers.Set("x-ms-date", "Fri, 26 Jun 2015 23:39:12 GMT");
    r.headers.Set("x-ms-version", "2015-02-21");
    EXPECT_EQ(SharedKeyStringToSign(r, "myaccount"),
              "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\n"
              "x-ms-version:2015-02-21\n" +
                  e.resource);
  }
}

TEST(SharedKey, CanonicalizesXmsHeaders) {
  http::Request r;
  r.method = "GET";
  r.url = std::string(kBase) + "/c/b";
  r.headers.Add("X-MS-Version", "2021-08-06");
  r.headers.Add("x-ms-meta-b", "  two  ");
  r.headers.Add("x-ms-meta-a", "one");
  r.headers.Add("x-ms-meta-b", "three");
  r.headers.Add("x-msx-other", "not canonicalized");
  r.headers.Add("x-ms-date", std::string(kDate));
  EXPECT_EQ(SharedKeyStringToSign(r, "myaccount"),
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Tue, 07 Jan 2025 12:34:56 GMT\n"
            "x-ms-meta-a:one\nx-ms-meta-b:two,three\nx-ms-version:2021-08-06\n/myaccount/c/b");
}

TEST(SharedKey, QueryNamesAreLowercasedAndValuesDecoded) {
  auto r =
      MakeRequest("GET", std::string(kBase) + "/c?COMP=list&restype=container&prefix=%C3%A9%2B");
  EXPECT_THAT(SharedKeyStringToSign(r, "myaccount"),
              EndsWith("/myaccount/c\ncomp:list\nprefix:\xc3\xa9+\nrestype:container"));
}

TEST(SharedKey, SetsDateWhenAbsent) {
  http::Request r;
  r.method = "HEAD";
  r.url = std::string(kBase) + "/c/b";
  SignSharedKey(r, "myaccount", DecodedKey(), std::chrono::system_clock::from_time_t(1736253296));
  EXPECT_EQ(r.headers.Get("x-ms-date").value_or(""), kDate);
  EXPECT_THAT(std::string(r.headers.Get("Authorization").value_or("")),
              ::testing::StartsWith("SharedKey myaccount:"));
}

TEST(Sas, AppendsWithTheRightSeparator) {
  EXPECT_EQ(AppendSasToken("https://a.blob.core.windows.net/c/b", "sv=2021&sig=abc"),
            "https://a.blob.core.windows.net/c/b?sv=2021&sig=abc");
  EXPECT_EQ(AppendSasToken("https://a.blob.core.windows.net/c/b", "?sv=2021&sig=abc"),
            "https://a.blob.core.windows.net/c/b?sv=2021&sig=abc");
  EXPECT_EQ(AppendSasToken("https://a.blob.core.windows.net/c?comp=list", "?sv=2021&sig=abc"),
            "https://a.blob.core.windows.net/c?comp=list&sv=2021&sig=abc");
  EXPECT_EQ(AppendSasToken("https://a.blob.core.windows.net/c/b", ""),
            "https://a.blob.core.windows.net/c/b");
  EXPECT_EQ(AppendSasToken("https://a.blob.core.windows.net/c/b", "?"),
            "https://a.blob.core.windows.net/c/b");
}

TEST(Authorize, PicksSharedKeyThenSasThenNothing) {
  const auto now = std::chrono::system_clock::from_time_t(1736253296);
  AzureCredentials both{"myaccount", DecodedKey(), "sv=1&sig=secret"};
  http::Request r1 = MakeRequest("GET", std::string(kBase) + "/c/b");
  Authorize(r1, both, now);
  EXPECT_TRUE(r1.headers.Get("Authorization"));
  EXPECT_THAT(r1.url, Not(HasSubstr("sig=")));

  AzureCredentials sas{"myaccount", "", "sv=1&sig=secret"};
  http::Request r2 = MakeRequest("GET", std::string(kBase) + "/c/b");
  Authorize(r2, sas, now);
  EXPECT_FALSE(r2.headers.Get("Authorization"));
  EXPECT_EQ(r2.url, std::string(kBase) + "/c/b?sv=1&sig=secret");

  AzureCredentials anonymous{"myaccount", "", ""};
  http::Request r3;
  r3.url = std::string(kBase) + "/c/b";
  Authorize(r3, anonymous, now);
  EXPECT_FALSE(r3.headers.Get("Authorization"));
  EXPECT_EQ(r3.url, std::string(kBase) + "/c/b");
  EXPECT_EQ(r3.headers.Get("x-ms-date").value_or(""), kDate);
}

}  // namespace
}  // namespace ferry::internal_azure
