// Credentials the S3 unit tests sign with: AWS's documented example secret and a made-up session
// token, the strings that must never appear in an error or a log.
#pragma once

#include <string_view>

namespace ferry::internal_s3::s3_test {

constexpr std::string_view kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr std::string_view kToken = "FwoGZXIvYXdzEBYaDExampleSessionToken+/=";

}  // namespace ferry::internal_s3::s3_test
