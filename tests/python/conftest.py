"""Shared pytest fixtures. The suite runs with Debian's /usr/bin/python3 and
PYTHONPATH=<build>/python (scripts/run-tests.sh); FERRY_FIXTURES_DIR overrides where Mosaic
Streaming's fixture datasets are (default: scripts/fixtures-dir.txt)."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The default, relative to the repository root, is written once (docs/development.md).
FIXTURES = pathlib.Path(
    os.environ.get("FERRY_FIXTURES_DIR")
    or ROOT / (ROOT / "scripts" / "fixtures-dir.txt").read_text().splitlines()[0]
)
FIXTURE_NAMES = sorted(
    p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file()
) if FIXTURES.is_dir() else []


def upload_dataset(folder, url):
    """Puts every file of the local dataset ``folder`` under ``url`` (with ferry's own client);
    returns ``url``."""
    from ferry import _ferry

    for name in os.listdir(folder):
        _ferry.put_file(f"{url}/{name}", os.path.join(folder, name))
    return url


def write_samples(folder, count, blob_of, size_limit, compression=None):
    """Writes an MDS dataset of `count` samples {"id": i, "blob": blob_of(i)} into ``folder``
    (shards of at most ``size_limit`` bytes, compressed so if given); returns its file names,
    sorted."""
    import ferry

    with ferry.MDSWriter(out=str(folder), columns={"id": "int", "blob": "bytes"},
                         size_limit=size_limit, compression=compression) as writer:
        for i in range(count):
            writer.write({"id": i, "blob": blob_of(i)})
    return sorted(os.listdir(folder))


def run_ferry(*args, check=True, env=None):
    """Runs the ferry command of the build under test; asserts it succeeded unless not
    ``check``. Returns the CompletedProcess (stdout and stderr as text)."""
    from ferry import _cli

    done = subprocess.run([_cli.executable(), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory) -> pathlib.Path:
    """A private copy of the fixture datasets: reading compressed ones in place writes the
    decompressed shards beside them, which must not touch the shared originals."""
    if not FIXTURE_NAMES:
        pytest.fail(f"no fixtures found in {FIXTURES}")
    copy = tmp_path_factory.mktemp("fixtures")
    for name in FIXTURE_NAMES:
        shutil.copytree(FIXTURES / name, copy / name)
    return copy


@pytest.fixture(autouse=True)
def _single_process_world(monkeypatch):
    """No test inherits a distributed world from the environment."""
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


def _s3_server(monkeypatch, name):
    """The S3 server FERRY_TEST_<NAME>_* of scripts/test-servers.sh, with the AWS_* variables
    pointing ferry at it."""
    endpoint = os.environ.get(f"FERRY_TEST_{name}_ENDPOINT")
    if not endpoint:
        pytest.fail(f"no {name.lower()} test server: run through scripts/run-tests.sh (make test)")
    server = {"endpoint": endpoint, "bucket": os.environ[f"FERRY_TEST_{name}_BUCKET"],
              "key": os.environ[f"FERRY_TEST_{name}_ACCESS_KEY"],
              "secret": os.environ[f"FERRY_TEST_{name}_SECRET_KEY"]}
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server["secret"])
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    return server


@pytest.fixture
def s3rver(monkeypatch):
    """The loopback s3rver of scripts/test-servers.sh, with the AWS_* variables pointing ferry at
    it: {"endpoint", "bucket", "key", "secret"}. Fails (never skips) without the servers."""
    return _s3_server(monkeypatch, "S3RVER")


@pytest.fixture
def moto(monkeypatch):
    """The loopback moto S3 server of scripts/test-servers.sh (authentication off), as s3rver
    above."""
    return _s3_server(monkeypatch, "MOTO")


@pytest.fixture
def databricks(monkeypatch):
    """The loopback Databricks workspace of scripts/test-servers.sh, with the DATABRICKS_*
    variables of its service principal (OAuth machine-to-machine, tokens of 6 s life):
    {"host", "volume"}. Fails (never skips) without the servers."""
    host = os.environ.get("FERRY_TEST_DATABRICKS_HOST")
    if not host:
        pytest.fail("no Databricks test server: run through scripts/run-tests.sh (make test)")
    monkeypatch.setenv("DATABRICKS_HOST", host)
    monkeypatch.setenv("DATABRICKS_CLIENT_ID", os.environ["FERRY_TEST_DATABRICKS_CLIENT_ID"])
    monkeypatch.setenv("DATABRICKS_CLIENT_SECRET",
                       os.environ["FERRY_TEST_DATABRICKS_CLIENT_SECRET"])
    monkeypatch.delenv("DATABRICKS_TOKEN", raising=False)
    monkeypatch.setenv("DATABRICKS_CONFIG_FILE", "/nonexistent/.databrickscfg")
    monkeypatch.setenv("FERRY_DATABRICKS_FUSE", "false")
    return {"host": host, "volume": os.environ["FERRY_TEST_DATABRICKS_VOLUME"]}


@pytest.fixture
def wan_proxy(tmp_path):
    """wan_proxy(target, *args): starts ferry-wan in front of ``target`` ("HOST:PORT") with
    those options ("--delay-ms", "50"); returns (port, stop), where stop() stops it and returns
    what went through ({"bytes_to_client", "body_bytes_to_client", "requests", ...}). Every one
    started is stopped at the end."""
    binary = ROOT / os.environ.get("FERRY_PYTHON_BUILD", "build/release") / "bench" / "ferry-wan"
    started = []

    def start(target, *args):
        port_file = tmp_path / f"wan{len(started)}.port"
        proc = subprocess.Popen([str(binary), "--target", target, "--port-file", str(port_file),
                                 *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
        started.append(proc)
        deadline = time.monotonic() + 10
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline, "ferry-wan did not start"
            time.sleep(0.02)

        def stop():
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=10)
            return json.loads(out.strip().splitlines()[-1])

        return int(port_file.read_text().strip()), stop

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def wan(s3rver, wan_proxy, monkeypatch):
    """wan(*args): starts ferry-wan in front of s3rver with those options ("--delay-ms", "50")
    and points AWS_ENDPOINT_URL through it; returns stop(), which stops it and returns what went
    through ({"bytes_to_client", "requests", ...}). Every one started is stopped at the end."""

    def start(*args):
        port, stop = wan_proxy(s3rver["endpoint"].rsplit("/", 1)[-1], *args)
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
        return stop

    return start


@pytest.fixture
def slow_link(wan):
    """ferry-wan in front of s3rver, each connection capped at 1 MB/s: AWS_ENDPOINT_URL points
    through it."""
    wan("--conn-mbps", "1")


def _seconds_to_interrupt(iterate, after_s):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(after_s, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            iterate()
        return time.monotonic() - start
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def seconds_to_interrupt():
    """seconds_to_interrupt(iterate, after_s): runs iterate() with a SIGINT (Ctrl+C) sent to this
    process after `after_s` seconds, and returns how long until KeyboardInterrupt came out of it
    (pytest fails the test if none did)."""
    return _seconds_to_interrupt
