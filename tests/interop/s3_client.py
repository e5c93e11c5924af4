#!/usr/bin/python3
"""An independent S3 client for ferry's interop tests: boto3 against the loopback test servers.

Tests use it to put objects ferry must read, and to check what ferry wrote, through a client that
shares no code with ferry. Run it with Debian's interpreter (/usr/bin/python3: boto3 1.26).

  s3_client.py [--server s3rver|moto|moto-auth] [--env-file FILE] [--endpoint URL]
               [--access-key K] [--secret-key S] CMD ARGS
    put BUCKET KEY FILE          upload FILE ('-' = stdin) in one PUT, so the ETag is the MD5
    get BUCKET KEY FILE          download to FILE ('-' = stdout); --range bytes=A-B for part of it
    list BUCKET [PREFIX]         one line per object: "key size etag" (etag without quotes)
    head BUCKET KEY              "size etag"
    delete BUCKET KEY...         delete keys (S3 answers success for a key that does not exist)
    create BUCKET                create a bucket (success if it already exists and is ours)

The endpoint and keys come from FERRY_TEST_<SERVER>_* (see ferry_test_env.py); --access-key and
--secret-key override them, e.g. to check that the auth-mode moto refuses a wrong secret.
Exit codes: 0 ok, 1 error, 2 usage/configuration, 3 not found, 4 credentials refused.
"""

import argparse
import shutil
import sys

import ferry_test_env as fte

PROG = "s3_client"
NOT_FOUND_CODES = {"NoSuchKey", "NoSuchBucket", "404", "NotFound"}
DENIED_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403", "401"}


def strip_etag(etag):
    return (etag or "").strip('"')


def cmd_put(s3, a):
    if a.file == "-":
        body = sys.stdin.buffer.read()
        s3.put_object(Bucket=a.bucket, Key=a.key, Body=body)
    else:
        with open(a.file, "rb") as f:
            s3.put_object(Bucket=a.bucket, Key=a.key, Body=f)


def cmd_get(s3, a):
    kwargs = {"Bucket": a.bucket, "Key": a.key}
    if a.range:
        kwargs["Range"] = a.range
    body = s3.get_object(**kwargs)["Body"]
    if a.file == "-":
        shutil.copyfileobj(body, sys.stdout.buffer, 1 << 20)
    else:
        with open(a.file, "wb") as f:
            shutil.copyfileobj(body, f, 1 << 20)


def cmd_list(s3, a):
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=a.bucket, Prefix=a.prefix):
        for obj in page.get("Contents", []):
            print(obj["Key"], obj["Size"], strip_etag(obj.get("ETag")))


def cmd_head(s3, a):
    r = s3.head_object(Bucket=a.bucket, Key=a.key)
    print(r["ContentLength"], strip_etag(r.get("ETag")))


def cmd_delete(s3, a):
    for key in a.keys:
        s3.delete_object(Bucket=a.bucket, Key=key)


def cmd_create(s3, a):
    try:
        s3.create_bucket(Bucket=a.bucket)
    except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
        pass  # s3rver answers BucketAlreadyExists for its own bucket


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--server", choices=sorted(fte.S3_SERVERS), default="s3rver")
    p.add_argument("--env-file", help="env file written by scripts/test-servers.sh")
    p.add_argument("--endpoint", help="override the endpoint URL")
    p.add_argument("--access-key", help="override the access key id")
    p.add_argument("--secret-key", help="override the secret access key")
    sub = p.add_subparsers(dest="cmd", required=True)
    for cmd, args in [("put", "bucket key file"), ("get", "bucket key file"),
                      ("list", "bucket prefix?"), ("head", "bucket key"),
                      ("delete", "bucket keys+"), ("create", "bucket")]:
        s = sub.add_parser(cmd)
        for arg in args.split():
            if arg.endswith("?"):
                s.add_argument(arg[:-1], nargs="?", default="")
            elif arg.endswith("+"):
                s.add_argument(arg[:-1], nargs="+")
            else:
                s.add_argument(arg)
        if cmd == "get":
            s.add_argument("--range", help="HTTP range, e.g. bytes=0-99")
    return p.parse_args(argv)


def main(argv):
    a = parse_args(argv)
    try:
        env = fte.Env(a.env_file)
        prefix = fte.S3_SERVERS[a.server]
        endpoint = a.endpoint or env.require(prefix + "_ENDPOINT")
        access_key = a.access_key or env.require(prefix + "_ACCESS_KEY")
        secret_key = a.secret_key or env.require(prefix + "_SECRET_KEY")
        region = env.get("FERRY_TEST_REGION", "us-east-1")
    except fte.ConfigError as e:
        fte.fail(PROG, str(e), fte.EXIT_USAGE)

    import botocore.exceptions

    s3 = fte.make_s3_client(endpoint, access_key, secret_key, region)
    name = getattr(a, "key", None) or getattr(a, "prefix", None) or " ".join(getattr(a, "keys", []))
    what = f"{a.cmd} s3://{a.bucket}/{name} at {endpoint}"
    try:
        globals()["cmd_" + a.cmd](s3, a)
    except botocore.exceptions.ClientError as e:
        err = e.response.get("Error", {})
        code = str(err.get("Code", "?"))
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        exit_code = fte.EXIT_ERROR
        if code in NOT_FOUND_CODES or status == 404:
            exit_code = fte.EXIT_NOT_FOUND
        elif code in DENIED_CODES or status in (401, 403):
            exit_code = fte.EXIT_DENIED
        fte.fail(PROG, f"{what}: {code} (HTTP {status}): {err.get('Message', '')}", exit_code)
    except (botocore.exceptions.BotoCoreError, OSError) as e:
        fte.fail(PROG, f"{what}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
