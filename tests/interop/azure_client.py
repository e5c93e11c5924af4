#!/usr/bin/python3
"""An independent Azure Blob client for ferry's interop tests: azure-storage-blob against Azurite.

The same subcommands as s3_client.py, with a container in place of a bucket. Run it with Debian's
interpreter (/usr/bin/python3: azure-storage-blob 12.15).

  azure_client.py [--env-file FILE] [--connection-string CS] CMD
    put CONTAINER BLOB FILE      upload FILE ('-' = stdin), replacing any existing blob
    get CONTAINER BLOB FILE      download to FILE ('-' = stdout); --range bytes=A-B for part of it
    list CONTAINER [PREFIX]      one line per blob: "name size etag" (etag without quotes)
    head CONTAINER BLOB          "size etag"
    delete CONTAINER BLOB...     delete blobs (unlike S3, a missing blob is an error: exit 3)
    create CONTAINER             create a container (success if it already exists)

The connection string comes from FERRY_TEST_AZURITE_CONNECTION_STRING (see ferry_test_env.py);
--connection-string overrides it, e.g. with a wrong AccountKey to check that Azurite refuses it.
Exit codes: 0 ok, 1 error, 2 usage/configuration, 3 not found, 4 credentials refused.
"""

import argparse
import re
import sys

import ferry_test_env as fte

PROG = "azure_client"


def strip_etag(etag):
    return (etag or "").strip('"')


def error_code(e):
    code = getattr(e, "error_code", None)
    return getattr(code, "value", code)  # the SDK hands some codes back as StorageErrorCode enums


def parse_range(text):
    m = re.fullmatch(r"bytes=(\d+)-(\d*)", text or "")
    if not m:
        raise ValueError(f"--range must look like bytes=A-B or bytes=A-, not {text!r}")
    start = int(m.group(1))
    length = int(m.group(2)) - start + 1 if m.group(2) else None
    return start, length


def cmd_put(svc, a):
    blob = svc.get_blob_client(a.container, a.blob)
    if a.file == "-":
        blob.upload_blob(sys.stdin.buffer.read(), overwrite=True)
    else:
        with open(a.file, "rb") as f:
            blob.upload_blob(f, overwrite=True)


def cmd_get(svc, a):
    offset, length = parse_range(a.range) if a.range else (None, None)
    stream = svc.get_blob_client(a.container, a.blob).download_blob(offset=offset, length=length)
    if a.file == "-":
        stream.readinto(sys.stdout.buffer)
    else:
        with open(a.file, "wb") as f:
            stream.readinto(f)


def cmd_list(svc, a):
    for b in svc.get_container_client(a.container).list_blobs(name_starts_with=a.prefix or None):
        print(b.name, b.size, strip_etag(b.etag))


def cmd_head(svc, a):
    p = svc.get_blob_client(a.container, a.blob).get_blob_properties()
    print(p.size, strip_etag(p.etag))


def cmd_delete(svc, a):
    for name in a.blobs:
        svc.get_blob_client(a.container, name).delete_blob()


def cmd_create(svc, a):
    from azure.core.exceptions import ResourceExistsError

    try:
        svc.create_container(a.container)
    except ResourceExistsError:
        pass


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--env-file", help="env file written by scripts/test-servers.sh")
    p.add_argument("--connection-string", help="override the connection string")
    sub = p.add_subparsers(dest="cmd", required=True)
    for cmd, args in [("put", "container blob file"), ("get", "container blob file"),
                      ("list", "container prefix?"), ("head", "container blob"),
                      ("delete", "container blobs+"), ("create", "container")]:
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
        cs = a.connection_string or env.require(fte.AZURE_PREFIX + "_CONNECTION_STRING")
    except fte.ConfigError as e:
        fte.fail(PROG, str(e), fte.EXIT_USAGE)

    from azure.core.exceptions import (AzureError, ClientAuthenticationError, HttpResponseError,
                                       ResourceNotFoundError)

    endpoint = next((part.split("=", 1)[1] for part in cs.split(";")
                     if part.startswith("BlobEndpoint=")), "?")
    name = (getattr(a, "blob", None) or getattr(a, "prefix", None)
            or " ".join(getattr(a, "blobs", [])))
    what = f"{a.cmd} {endpoint}/{a.container}/{name}"
    try:
        svc = fte.make_blob_service(cs)
        globals()["cmd_" + a.cmd](svc, a)
    except ResourceNotFoundError as e:
        fte.fail(PROG, f"{what}: {error_code(e) or 'not found'} (HTTP 404)", fte.EXIT_NOT_FOUND)
    except (ClientAuthenticationError, HttpResponseError) as e:
        status = getattr(e, "status_code", None)
        code = fte.EXIT_DENIED if status in (401, 403) else fte.EXIT_ERROR
        first_line = str(e.message or e).splitlines()[0]
        fte.fail(PROG, f"{what}: {error_code(e) or '?'} (HTTP {status}): {first_line}", code)
    except (AzureError, OSError, ValueError) as e:
        fte.fail(PROG, f"{what}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
