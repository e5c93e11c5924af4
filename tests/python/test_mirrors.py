"""A dataset read from three mirrors at once (src/storage/mirror_store.h): s3rver behind
ferry-wan (killed mid-epoch, as a region going away), Azurite holding part of the shards (a
copy still being staged) and a local folder. Every sample comes once with its bytes, and the
mirrors' counters add up to each byte delivered once."""

import json
import os
import subprocess
import sys
import threading
import time
import uuid

import pytest

import ferry
from conftest import upload_dataset, write_samples

SAMPLES = 600


def _blob(i):
    return bytes([i % 251]) * (1000 + i % 300)


@pytest.fixture
def azurite(monkeypatch):
    connection = os.environ.get("FERRY_TEST_AZURITE_CONNECTION_STRING")
    if not connection:
        pytest.fail("no Azurite test server: run through scripts/run-tests.sh (make test)")
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection)
    return os.environ["FERRY_TEST_AZURITE_CONTAINER"]


def _read_every_sample(dataset, count):
    """Iterates ``dataset``, checking each sample's bytes and that the ids are 0..count-1, each
    once; returns the seconds it took."""
    started = time.monotonic()
    seen = []
    for sample in dataset:
        assert sample["blob"] == _blob(sample["id"]), sample["id"]
        seen.append(sample["id"])
    assert sorted(seen) == list(range(count))
    return time.monotonic() - started


def _counters(names):
    values = ferry.metrics()
    return {name: values.get(name, 0) for name in names}


def test_three_mirrors_one_killed_one_partial_deliver_every_sample_once(
        tmp_path, s3rver, wan, azurite):
    source = tmp_path / "source"
    names = write_samples(source, SAMPLES, _blob, 1 << 16)
    shards = [n for n in names if n.startswith("shard.")]
    assert len(shards) >= 8
    run = uuid.uuid4().hex[:12]
    s3_url = upload_dataset(source, f"s3://{s3rver['bucket']}/python/mirrors/{run}")
    az_url = f"az://{azurite}/python/mirrors/{run}"
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in names:
        if name == "index.json" or int(name.split(".")[1]) % 2 == 0:
            os.link(source / name, partial / name)
    upload_dataset(partial, az_url)
    # 200 KB/s: a shard of 64 KB takes a third of a second, so the kill lands mid-shard.
    stop_wan = wan("--total-mbps", "0.2")
    watched = [f"/ferry/mirror/{i}/{what}" for i in range(3)
               for what in ("bytes_read", "failovers", "missing")] + [
                   "/ferry/cache/downloads", "/ferry/cache/downloaded_bytes"]
    before = _counters(watched)
    dataset = ferry.StreamingDataset(remote=[s3_url, az_url, str(source)],
                                     local=str(tmp_path / "cache"), shuffle=False, batch_size=8)
    assert dataset.streams[0].mirrors == [az_url, str(source)]
    killer = threading.Timer(1.0, stop_wan)
    killer.start()
    elapsed = _read_every_sample(dataset, SAMPLES)
    killer.join()
    assert elapsed < 120, elapsed
    after = _counters(watched)
    delta = {name: after[name] - before[name] for name in watched}
    # Each shard was downloaded once, whole, from one mirror or another (a download cut by the
    # kill went on from the next mirror at the byte it had reached); besides the shards and
    # index.json, the mirrors sent only the first batch's samples, read by range at the start.
    shard_bytes = sum((source / n).stat().st_size for n in shards)
    assert delta["/ferry/cache/downloads"] == len(shards), delta
    assert delta["/ferry/cache/downloaded_bytes"] == shard_bytes, delta
    total = shard_bytes + (source / "index.json").stat().st_size
    from_mirrors = sum(delta[f"/ferry/mirror/{i}/bytes_read"] for i in range(3))
    assert total <= from_mirrors <= total + 8 * 1300, delta
    assert delta["/ferry/mirror/0/bytes_read"] > 0, "s3 served until it was killed"
    assert delta["/ferry/mirror/0/failovers"] >= 1, delta
    # Azurite lacks the odd shards that s3 no longer served; the folder has everything.
    assert delta["/ferry/mirror/1/missing"] >= 1, delta
    assert delta["/ferry/mirror/2/bytes_read"] > 0, delta


def test_local_moto_and_azurite_mirrors_miss_stall_and_fail_and_each_byte_is_counted(
        tmp_path, moto, azurite, wan_proxy, monkeypatch):
    # A local staged copy lacking the odd shards, first; Azurite, whose first connection stalls;
    # moto, whose every connection is cut within 60 KB. Every sample comes once with its bytes,
    # and each server's mirror counter equals the reply bodies its proxy sent, less index.json
    # (read at the open, before the mirrors' counters).
    source = tmp_path / "source"
    names = write_samples(source, 600, _blob, 1 << 16)
    shards = [n for n in names if n.startswith("shard.")]
    run = uuid.uuid4().hex[:12]
    staged = tmp_path / "staged"
    staged.mkdir()
    for name in names:
        if name == "index.json" or int(name.split(".")[1]) % 2 == 0:
            os.link(source / name, staged / name)
    s3_url = upload_dataset(source, f"s3://{moto['bucket']}/python/three-mirrors/{run}")
    az_url = upload_dataset(source, f"az://{azurite}/python/three-mirrors/{run}")
    index_bytes = (source / "index.json").stat().st_size

    moto_port, stop_moto = wan_proxy(
        moto["endpoint"].rsplit("/", 1)[-1], "--fault-kinds", "truncate", "--fault-rate", "1",
        "--fault-max-offset", "60000", "--fault-seed", "3")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{moto_port}")
    az_endpoint = os.environ["FERRY_TEST_AZURITE_ENDPOINT"]  # http://127.0.0.1:PORT/account
    az_target = az_endpoint.split("/")[2]
    # The open reads index.json through a proxy that does not stall; then every connection to
    # the same port goes through one whose first connection stalls for 2 minutes.
    az_port, stop_clean = wan_proxy(az_target)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING",
                       os.environ["FERRY_TEST_AZURITE_CONNECTION_STRING"].replace(
                           az_target, f"127.0.0.1:{az_port}"))
    watched = [f"/ferry/mirror/{i}/{what}" for i in range(3)
               for what in ("bytes_read", "failovers", "missing")]
    before = _counters(watched)
    dataset = ferry.StreamingDataset(remote=[str(staged), az_url, s3_url],
                                     local=str(tmp_path / "cache"), shuffle=False, batch_size=8)
    at_open = stop_clean()
    _, stop_stalling = wan_proxy(az_target, "--listen", str(az_port), "--fault-kinds", "stall",
                                 "--fault-rate", "0.000001", "--fault-stall-ms", "120000",
                                 "--fault-max-offset", "20000")
    elapsed = _read_every_sample(dataset, 600)
    assert elapsed < 60, elapsed
    delta = {name: value - before[name] for name, value in _counters(watched).items()}
    az_wire, moto_wire = stop_stalling(), stop_moto()
    assert at_open["body_bytes_to_client"] == index_bytes, at_open
    assert delta["/ferry/mirror/1/bytes_read"] == az_wire["body_bytes_to_client"], (delta, az_wire)
    assert delta["/ferry/mirror/2/bytes_read"] + index_bytes == moto_wire["body_bytes_to_client"], (
        delta, moto_wire)
    # The staged copy lacked the odd shards; Azurite's stall was left after 5 s; moto cut
    # replies mid-body, and its reads went on from the byte reached.
    assert delta["/ferry/mirror/0/missing"] >= 1, delta
    assert az_wire["faults"]["stall"] == 1, az_wire
    assert delta["/ferry/mirror/1/failovers"] >= 1, delta
    assert moto_wire["faults"]["truncate"] >= 1, moto_wire
    assert delta["/ferry/mirror/2/bytes_read"] > 0, delta
    # Each byte of the shards once, besides the first batch's samples read by range.
    total = sum((source / n).stat().st_size for n in shards) + index_bytes
    from_mirrors = sum(delta[f"/ferry/mirror/{i}/bytes_read"] for i in range(3))
    assert total <= from_mirrors <= total + 8 * 1300, delta


def test_a_mirrors_copy_of_another_size_is_passed_over(tmp_path):
    # A staged copy whose shards were cut short, or replaced by files of another size: the
    # reads go to the mirror whose copies match the index, and every sample is right.
    source = tmp_path / "source"
    names = write_samples(source, 300, _blob, 1 << 15)
    shards = sorted(n for n in names if n.startswith("shard."))
    staged = tmp_path / "staged"
    staged.mkdir()
    for name in names:
        data = (source / name).read_bytes()
        if name == shards[0]:
            data = data[: len(data) // 2]
        elif name == shards[1]:
            data = data + b"\0" * 10
        (staged / name).write_bytes(data)
    watched = ["/ferry/mirror/0/wrong_size", "/ferry/mirror/0/bytes_read",
               "/ferry/mirror/1/bytes_read"]
    before = _counters(watched)
    dataset = ferry.StreamingDataset(remote=[str(staged), str(source)],
                                     local=str(tmp_path / "cache"), shuffle=False, batch_size=8)
    _read_every_sample(dataset, 300)
    delta = {name: value - before[name] for name, value in _counters(watched).items()}
    assert delta["/ferry/mirror/0/wrong_size"] == 2, delta
    # The two shards came from the second mirror; the staged copy served most of the rest (the
    # second is read now and then, to measure its speed).
    sizes = {name: (source / name).stat().st_size for name in shards}
    assert delta["/ferry/mirror/1/bytes_read"] >= sizes[shards[0]] + sizes[shards[1]], delta
    assert delta["/ferry/mirror/0/bytes_read"] >= sum(sizes.values()) // 2, delta


def test_mirrors_found_the_same_are_asked_only_their_versions_at_the_next_open(tmp_path):
    source = tmp_path / "source"
    names = write_samples(source, 100, _blob, 1 << 15)
    staged = tmp_path / "staged"
    staged.mkdir()
    for name in names:
        (staged / name).write_bytes((source / name).read_bytes())
    cache = tmp_path / "cache"

    def open_it():
        return ferry.StreamingDataset(remote=[str(staged), str(source)], local=str(cache),
                                      shuffle=False, batch_size=8)

    _read_every_sample(open_it(), 100)
    kept = json.loads((cache / ".ferry" / "mirrors.json").read_text())["index_versions"]
    assert len(kept) == 2 and all(url.endswith("/index.json") for url in kept), kept
    assert any(str(staged) in url for url in kept) and any(str(source) in url for url in kept)
    # The cached index.json is current while the copies' versions are: it is not fetched again.
    origin = json.loads((cache / ".ferry" / "origin.json").read_text())["index_version"]
    assert origin.startswith("mirrors:"), origin
    fetched = (cache / "index.json").stat().st_mtime_ns
    # The staged copy's index gets other bytes but keeps its time (its version): the next open
    # asks only for the versions, so it reads no copy, and cannot tell - as the cache trusts an
    # index.json whose version is unchanged.
    index = staged / "index.json"
    before = index.stat()
    index.write_text(index.read_text() + " ")
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))
    _read_every_sample(open_it(), 100)
    assert (cache / "index.json").stat().st_mtime_ns == fetched
    # A new version: the copies are read again, and differ.
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    with pytest.raises(ferry.FailedPreconditionError, match="mirrors must hold one dataset"):
        open_it()
    # Put right (the same bytes, another time): read, found the same, and kept again.
    index.write_bytes((source / "index.json").read_bytes())
    _read_every_sample(open_it(), 100)
    again = json.loads((cache / ".ferry" / "mirrors.json").read_text())["index_versions"]
    assert again.keys() == kept.keys() and again != kept
    assert json.loads((cache / ".ferry" / "origin.json").read_text())["index_version"] != origin


# Each process opens when every one is ready, and prints the bytes its stores read.
_OPEN_AT_ONCE = """
import os, sys, time, ferry
remote, mirror, local, go, ready = sys.argv[1:6]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.002)
ferry.StreamingDataset(remote=[remote, mirror], local=local)
print(sum(v for k, v in ferry.metrics().items()
          if k.startswith("/ferry/storage/") and k.endswith("/bytes_read")))
"""


def test_processes_opening_an_empty_folder_at_once_read_the_copies_once(tmp_path, s3rver, wan):
    # The ranks of a node starting together: one reads the mirrors' copies (under cache.lock)
    # and fetches index.json; the others find the versions kept and the cached copy current.
    source = tmp_path / "source"
    write_samples(source, 100, _blob, 1 << 15)
    url = upload_dataset(source, f"s3://{s3rver['bucket']}/python/mirrors/{uuid.uuid4().hex[:12]}")
    wan("--delay-ms", "100")  # a read of a copy takes round trips: without the lock, all overlap
    cache, go = tmp_path / "cache", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_AT_ONCE, url, str(source), str(cache),
                               str(go), str(tmp_path / f"ready{i}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready{i}").exists() for i in range(4)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.01)
    go.touch()
    read = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        read.append(int(out.split()[-1]))
    index = (source / "index.json").stat().st_size
    # Two copies, read by one process, and the fetch into the folder, by one (the first to take
    # cache.lock after them); without the lock each process read both copies.
    assert sum(read) == 3 * index and read.count(0) >= 2, (read, index)


def test_a_list_of_remotes_is_a_remote_and_its_mirrors(tmp_path):
    stream = ferry.Stream(remote=["s3://a/train", "az://b/train"], mirrors=["/data/train"],
                          local=str(tmp_path))
    assert stream.remote == "s3://a/train"
    assert stream.mirrors == ["az://b/train", "/data/train"]
    assert stream._options()["mirrors"] == ["az://b/train", "/data/train"]
    # WebDataset's list of tars is still one remote.
    tars = ferry.Stream(remote=["s3://a/0.tar", "s3://a/1.tar"], local=str(tmp_path))
    assert tars.remote == "s3://a/0.tar::s3://a/1.tar" and tars.mirrors == []
    with pytest.raises(ferry.InvalidArgumentError, match="`mirrors` need a `remote`"):
        ferry.Stream(mirrors=["s3://a/train"], local=str(tmp_path))


def test_a_stalled_mirror_is_left_within_seconds(tmp_path, s3rver, wan):
    source = tmp_path / "source"
    write_samples(source, 300, _blob, 1 << 15)
    url = upload_dataset(source, f"s3://{s3rver['bucket']}/python/mirrors/{uuid.uuid4().hex[:12]}")
    stop_clean = wan()  # the open reads index.json through a proxy that does not stall
    port = os.environ["AWS_ENDPOINT_URL"].rsplit(":", 1)[-1]
    dataset = ferry.StreamingDataset(remote=[url, str(source)], local=str(tmp_path / "cache"),
                                     shuffle=False, batch_size=8)
    stop_clean()
    # Now every reply of s3 stalls for 2 minutes within its first 20 KB.
    wan("--listen", port, "--fault-kinds", "stall", "--fault-rate", "1",
        "--fault-stall-ms", "120000", "--fault-max-offset", "20000")
    watched = ["/ferry/mirror/0/failovers", "/ferry/mirror/1/bytes_read"]
    before = _counters(watched)
    elapsed = _read_every_sample(dataset, 300)
    after = _counters(watched)
    assert after["/ferry/mirror/0/failovers"] > before["/ferry/mirror/0/failovers"]
    assert after["/ferry/mirror/1/bytes_read"] > before["/ferry/mirror/1/bytes_read"]
    # A stall is given up after 5 s (the transport's own limit is 30 s), and the folder goes on
    # from the byte reached.
    assert elapsed < 20, elapsed
