#!/usr/bin/python3
"""Prints SigV4 expectations computed by botocore, for s3_signer_test.cc.

Run with Debian's interpreter (botocore 1.29):  /usr/bin/python3 sigv4_botocore_vectors.py

Each case gives botocore the object key decoded and lets botocore's own S3 serializer rule
(percent_encode(key, safe='/~')) and its query encoder build the request, so the C++ signer is
checked against an independent implementation of the canonical URI and query, not against itself.
"""
import datetime
import types
from unittest import mock

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.utils import percent_encode

KEY_ID = "AKIAIOSFODNN7EXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
NOW = datetime.datetime(2024, 3, 9, 12, 34, 56)

CASES = [
    # name, method, base, key, params, headers, body, token, sign_payload
    ("key_with_spaces", "GET", "https://examplebucket.s3.us-west-2.amazonaws.com",
     "my folder/my file (1).txt", {}, {"Range": "bytes=100-199"}, b"", None, True),
    ("non_ascii_key", "GET", "https://examplebucket.s3.eu-central-1.amazonaws.com",
     "données/日本語 ファイル.bin", {}, {}, b"", None, True),
    ("plus_tilde_equals_put", "PUT", "http://127.0.0.1:5055/examplebucket",
     "a+b/c~d=e&f.txt", {}, {"Content-Type": "text/plain"}, b"hello, world\n", None, True),
    ("list_query", "GET", "https://examplebucket.s3.us-east-1.amazonaws.com", "",
     {"list-type": "2", "prefix": "photos/2024 march/a+b", "delimiter": "/",
      "encoding-type": "url", "continuation-token": "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=",
      "max-keys": "1000"}, {}, b"", None, True),
    ("session_token_unsigned_part", "PUT", "https://examplebucket.s3.us-east-1.amazonaws.com",
     "big/object.bin", {"partNumber": "3", "uploadId": "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"},
     {}, b"0123456789", "FwoGZXIvYXdzEBYaDExampleSessionToken+/=", False),
]


def main():
    creds_plain = Credentials(KEY_ID, SECRET)
    for name, method, base, key, params, headers, body, token, sign_payload in CASES:
        creds = Credentials(KEY_ID, SECRET, token) if token else creds_plain
        region = base.split(".s3.")[1].split(".")[0] if ".s3." in base else "us-east-1"
        url = base + "/" + percent_encode(key, safe="/~")
        request = AWSRequest(method=method, url=url, params=params, headers=dict(headers),
                             data=body)
        request.context["client_config"] = types.SimpleNamespace(
            s3={"payload_signing_enabled": sign_payload})
        with mock.patch("botocore.auth.datetime") as dt:
            dt.datetime.utcnow.return_value = NOW
            dt.datetime.strptime = datetime.datetime.strptime
            S3SigV4Auth(creds, "s3", region).add_auth(request)
        prepared = request.prepare()
        print(f"// {name}: region {region}")
        print(f"//   {method} {prepared.url}")
        for h in ("Authorization", "X-Amz-Content-SHA256"):
            print(f"//   {h}: {request.headers[h]}")


if __name__ == "__main__":
    main()
