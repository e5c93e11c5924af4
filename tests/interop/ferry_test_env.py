"""Where the loopback test servers are and how to sign in to them.

Shared by the interop clients (s3_client.py, azure_client.py) and provision.py. They run under
Debian's /usr/bin/python3 (boto3 1.26, azure-storage-blob 12.15), not the pyenv Python of moto.

Configuration comes from the FERRY_TEST_* variables that scripts/test-servers.sh writes (see the
top of that script for the list). A variable set in the process environment wins; anything not set
there is read from the env file the script wrote: --env-file, else $FERRY_TEST_SERVERS_STATE/env,
else <repo>/build/test-servers/env. That lets a test run a client without sourcing anything.
"""

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# Exit codes shared by the clients, so a test can tell "absent" and "refused" from other failures.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2  # bad arguments or missing configuration
EXIT_NOT_FOUND = 3  # no such bucket/container/key/blob
EXIT_DENIED = 4  # credentials refused (401/403)

# --server NAME -> the prefix of its variables in the env file.
S3_SERVERS = {
    "s3rver": "FERRY_TEST_S3RVER",
    "moto": "FERRY_TEST_MOTO",
    "moto-auth": "FERRY_TEST_MOTO_AUTH",
}
AZURE_PREFIX = "FERRY_TEST_AZURITE"


class ConfigError(Exception):
    pass


def default_env_file():
    state = os.environ.get("FERRY_TEST_SERVERS_STATE")
    return Path(state) / "env" if state else REPO_ROOT / "build" / "test-servers" / "env"


def read_env_file(path):
    """Parses NAME=value lines (the value is everything after the first '=', unquoted)."""
    values = {}
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return values
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        values[name.strip()] = value
    return values


class Env:
    def __init__(self, env_file=None):
        self.path = Path(env_file) if env_file else default_env_file()
        self.file_values = read_env_file(self.path)

    def get(self, name, default=None):
        if name in os.environ:
            return os.environ[name]
        return self.file_values.get(name, default)

    def require(self, name):
        value = self.get(name)
        if value is None or value == "":
            raise ConfigError(
                f"{name} is not set in the environment nor in {self.path} "
                "(start the servers with scripts/test-servers.sh start)"
            )
        return value


def s3_config(env, server):
    prefix = S3_SERVERS[server]
    return {
        "endpoint": env.require(prefix + "_ENDPOINT"),
        "bucket": env.get(prefix + "_BUCKET", "ferry-test"),
        "access_key": env.require(prefix + "_ACCESS_KEY"),
        "secret_key": env.require(prefix + "_SECRET_KEY"),
        "region": env.get("FERRY_TEST_REGION", "us-east-1"),
    }


def make_s3_client(endpoint, access_key, secret_key, region="us-east-1"):
    import boto3
    from botocore.config import Config

    # Path-style addressing: the servers listen on 127.0.0.1, where virtual-host buckets cannot
    # resolve. Few retries and short timeouts: a test wants the server's answer, not a retry loop.
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        config=Config(
            s3={"addressing_style": "path"},
            signature_version="s3v4",
            retries={"max_attempts": 2, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
        ),
    )


def azure_config(env):
    return {
        "endpoint": env.require(AZURE_PREFIX + "_ENDPOINT"),
        "container": env.get(AZURE_PREFIX + "_CONTAINER", "ferry-test"),
        "connection_string": env.require(AZURE_PREFIX + "_CONNECTION_STRING"),
    }


def make_blob_service(connection_string, ca_file=None):
    """A client for the connection string; `ca_file` verifies an HTTPS emulator's certificate."""
    from azure.storage.blob import BlobServiceClient

    extra = {"connection_verify": ca_file} if ca_file else {}
    return BlobServiceClient.from_connection_string(
        connection_string, retry_total=1, connection_timeout=5, read_timeout=60, **extra
    )


def fail(prog, message, code=EXIT_ERROR):
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(code)
