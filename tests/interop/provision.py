#!/usr/bin/python3
"""Creates what the tests expect on freshly started loopback servers. Called by
scripts/test-servers.sh after each server answers; safe to run again on a running server.

  provision.py [--env-file FILE] SERVER...      SERVER: s3rver, moto, moto-auth, azurite, azurite-oauth

  s3rver, moto   create the bucket FERRY_TEST_<SERVER>_BUCKET.
  azurite        create the container FERRY_TEST_AZURITE_CONTAINER.
  azurite-oauth  the same container in the HTTPS Azurite (FERRY_TEST_AZURITE_OAUTH_ENDPOINT).
  moto-auth      moto keeps everything in memory and, in auth mode, only accepts an access key its
                 own IAM issued. So, with authentication still off, this creates an IAM user with
                 an s3:* policy, an access key for it and the bucket, then switches authentication
                 on for every later request (POST /moto-api/reset-auth with body "0": the same
                 switch as INITIAL_NO_AUTH_ACTION_COUNT=0, but after our setup requests rather than
                 counting them). It prints the key pair as FERRY_TEST_MOTO_AUTH_ACCESS_KEY=... and
                 FERRY_TEST_MOTO_AUTH_SECRET_KEY=... lines. moto's random generator is seeded just
                 before the key is made (POST /moto-api/seed), so a restarted server issues the
                 same pair and an env file written earlier stays valid. It then checks that the
                 pair works and that a wrong secret is refused.
"""

import argparse
import json
import sys
import urllib.request

import ferry_test_env as fte

PROG = "provision"
MOTO_AUTH_USER = "ferry-test"
MOTO_KEY_SEED = 20240601  # any fixed number: same seed, same key pair after a restart
S3_ALL_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
}


def log(message):
    print(f"{PROG}: {message}", file=sys.stderr)


def moto_api(endpoint, path, body):
    # text/plain: moto reads the raw body, which Flask would swallow as form data otherwise.
    req = urllib.request.Request(endpoint + path, data=body.encode(), method="POST",
                                 headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def create_bucket(s3, bucket):
    try:
        s3.create_bucket(Bucket=bucket)
    except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
        pass


def provision_s3(env, server):
    prefix = fte.S3_SERVERS[server]
    endpoint = env.require(prefix + "_ENDPOINT")
    bucket = env.get(prefix + "_BUCKET", "ferry-test")
    s3 = fte.make_s3_client(endpoint, env.require(prefix + "_ACCESS_KEY"),
                            env.require(prefix + "_SECRET_KEY"))
    create_bucket(s3, bucket)
    log(f"{server}: bucket {bucket} ready at {endpoint}")


def provision_moto_auth(env):
    import boto3
    import botocore.exceptions

    endpoint = env.require("FERRY_TEST_MOTO_AUTH_ENDPOINT")
    bucket = env.get("FERRY_TEST_MOTO_AUTH_BUCKET", "ferry-test")
    # Authentication off while we set up (makes a rerun on a running server work too). With it
    # off moto accepts any key; the IAM user lands in moto's default account 123456789012, the
    # same account a request signed with the user's key maps to.
    moto_api(endpoint, "/moto-api/reset-auth", "inf")
    setup = dict(endpoint_url=endpoint, region_name="us-east-1",
                 aws_access_key_id="setup", aws_secret_access_key="setup")
    iam = boto3.session.Session().client("iam", **setup)
    try:
        iam.create_user(UserName=MOTO_AUTH_USER)
    except iam.exceptions.EntityAlreadyExistsException:
        pass
    iam.put_user_policy(UserName=MOTO_AUTH_USER, PolicyName="s3-all",
                        PolicyDocument=json.dumps(S3_ALL_POLICY))
    for old in iam.list_access_keys(UserName=MOTO_AUTH_USER)["AccessKeyMetadata"]:
        iam.delete_access_key(UserName=MOTO_AUTH_USER, AccessKeyId=old["AccessKeyId"])
    moto_api(endpoint, "/moto-api/seed?a=%d" % MOTO_KEY_SEED, "")
    key = iam.create_access_key(UserName=MOTO_AUTH_USER)["AccessKey"]
    create_bucket(fte.make_s3_client(endpoint, "setup", "setup"), bucket)
    moto_api(endpoint, "/moto-api/reset-auth", "0")

    # Self-check, so a moto upgrade that changes auth mode fails here rather than in a C++ test.
    good = fte.make_s3_client(endpoint, key["AccessKeyId"], key["SecretAccessKey"])
    good.head_bucket(Bucket=bucket)
    try:
        fte.make_s3_client(endpoint, key["AccessKeyId"], "wrong" + key["SecretAccessKey"][5:]) \
            .list_objects_v2(Bucket=bucket)
        raise RuntimeError("moto-auth accepted a wrong secret: auth mode is not on")
    except botocore.exceptions.ClientError as e:
        if e.response["Error"]["Code"] != "SignatureDoesNotMatch":
            raise
    print(f"FERRY_TEST_MOTO_AUTH_ACCESS_KEY={key['AccessKeyId']}")
    print(f"FERRY_TEST_MOTO_AUTH_SECRET_KEY={key['SecretAccessKey']}")
    log(f"moto-auth: user {MOTO_AUTH_USER}, key {key['AccessKeyId']}, bucket {bucket}, "
        f"auth on at {endpoint}")


def provision_azurite(env, oauth=False):
    from azure.core.exceptions import ResourceExistsError

    container = env.get("FERRY_TEST_AZURITE_CONTAINER", "ferry-test")
    endpoint = env.require("FERRY_TEST_AZURITE_OAUTH_ENDPOINT" if oauth
                           else "FERRY_TEST_AZURITE_ENDPOINT")
    connection_string = (f"AccountName={env.require('FERRY_TEST_AZURITE_ACCOUNT')};"
                         f"AccountKey={env.require('FERRY_TEST_AZURITE_KEY')};"
                         f"BlobEndpoint={endpoint};")
    svc = fte.make_blob_service(connection_string,
                                env.require("FERRY_TEST_AZURITE_OAUTH_CA") if oauth else None)
    try:
        svc.create_container(container)
    except ResourceExistsError:
        pass
    log(f"{'azurite-oauth' if oauth else 'azurite'}: container {container} ready at {endpoint}")


def main(argv):
    p = argparse.ArgumentParser(prog=PROG)
    p.add_argument("--env-file")
    p.add_argument("servers", nargs="+", choices=["s3rver", "moto", "moto-auth", "azurite", "azurite-oauth"])
    a = p.parse_args(argv)
    env = fte.Env(a.env_file)
    for server in a.servers:
        try:
            if server == "moto-auth":
                provision_moto_auth(env)
            elif server in ("azurite", "azurite-oauth"):
                provision_azurite(env, oauth=server == "azurite-oauth")
            else:
                provision_s3(env, server)
        except Exception as e:  # one message naming the server beats a traceback in a test log
            fte.fail(PROG, f"{server}: {type(e).__name__}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
