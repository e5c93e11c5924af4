// Which endpoints credentials may go to in the clear: only this machine, by exact address or
// name - never a host whose name merely starts like one.
#include "storage/http/url_host.h"

#include <gtest/gtest.h>

namespace ferry::http {
namespace {

TEST(UrlHost, TakesTheHostAlone) {
  EXPECT_EQ(UrlHost("http://user@127.0.0.1:8080/token?x=1"), "127.0.0.1");
  EXPECT_EQ(UrlHost("https://[::1]:443/a"), "::1");
  EXPECT_EQ(UrlHost("https://login.microsoftonline.com"), "login.microsoftonline.com");
  EXPECT_EQ(UrlHost("no scheme"), "");
}

TEST(UrlHost, OnlyThisMachineIsPrivateOverPlainHttp) {
  for (const char* ok : {"https://sts.example.com/x", "http://127.0.0.1:9/token",
                         "http://127.1.2.3/", "http://localhost:80/", "http://[::1]:8080/t"}) {
    EXPECT_TRUE(IsPrivateEndpoint(ok)) << ok;
  }
  for (const char* bad :
       {"http://127.evil.example/", "http://localhost.evil.example/", "http://127.0.0.1.nip.io/",
        "http://10.0.0.1/", "ftp://127.0.0.1/", "http://[::2]/"}) {
    EXPECT_FALSE(IsPrivateEndpoint(bad)) << bad;
  }
}

}  // namespace
}  // namespace ferry::http
