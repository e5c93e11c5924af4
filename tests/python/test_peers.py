"""The cluster cache (src/storage/peer_store.h, src/cache/peer_server.h): four nodes - four
processes, each with its own cache folder and peer server on loopback - read one dataset from
s3rver behind ferry-wan. The emulator's byte count shows each shard crossed it once, not once
per node that reads it; a node killed mid-epoch costs the others nothing but a failover."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

import ferry
from conftest import upload_dataset, write_samples

NODES = 4
SAMPLES = 960  # 240 per node
TOKEN = "test-peer-token-" + uuid.uuid4().hex

# One node: iterates its share (RANK of WORLD_SIZE, one rank per node), checks every sample's
# bytes and prints the ids it read; then, as a job's last barrier, serves the others until the
# file argv[3] appears, and prints its counters. Both lines JSON.
NODE = textwrap.dedent("""
    import json, os, sys, time
    import ferry
    local, remote, barrier = sys.argv[1], sys.argv[2], sys.argv[3]
    dataset = ferry.StreamingDataset(remote=remote, local=local, shuffle=True, batch_size=8)
    ids = []
    for sample in dataset:
        i = sample["id"]
        assert sample["blob"] == bytes([i % 251]) * (3000 + i % 500), i
        ids.append(i)
    print(json.dumps(ids), flush=True)
    deadline = time.monotonic() + 120
    while not os.path.exists(barrier) and time.monotonic() < deadline:
        time.sleep(0.05)
    values = ferry.metrics()
    print(json.dumps({"ids": ids, "peer_bytes": values.get("/ferry/peer/bytes_read", 0),
                      "served": values.get("/ferry/peer/served_bytes", 0),
                      "failovers": values.get("/ferry/peer/failovers", 0)}))
""")


def _blob(i):
    return bytes([i % 251]) * (3000 + i % 500)


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _listens(address):
    host, port = address.rsplit(":", 1)
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) == 0


def _start_nodes(tmp_path, url, peers):
    procs = []
    for node in range(NODES):
        env = dict(os.environ, RANK=str(node), WORLD_SIZE=str(NODES), LOCAL_WORLD_SIZE="1",
                   FERRY_PEERS=",".join(peers), FERRY_PEER_SELF=peers[node],
                   FERRY_PEER_TOKEN=TOKEN)
        procs.append(subprocess.Popen(
            [sys.executable, "-c", NODE, str(tmp_path / f"node{node}"), url,
             str(tmp_path / "barrier")], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def _finish(tmp_path, procs, timeout=120):
    """Each node's results, once every one has read its share (the barrier then lets them go)."""
    for proc in procs:
        line = proc.stdout.readline()
        if not line:
            _, err = proc.communicate(timeout=timeout)
            pytest.fail(f"a node failed: {err[-3000:]}")
    (tmp_path / "barrier").touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.fixture
def dataset_on_s3(tmp_path, s3rver):
    source = tmp_path / "source"
    names = write_samples(source, SAMPLES, _blob, 1 << 17)
    shards = [n for n in names if n.startswith("shard.")]
    assert len(shards) >= 16
    url = upload_dataset(source, f"s3://{s3rver['bucket']}/python/peers/{uuid.uuid4().hex[:12]}")
    shard_bytes = sum((source / n).stat().st_size for n in shards)
    return url, shard_bytes, (source / "index.json").stat().st_size


def test_four_nodes_fetch_each_shard_across_the_wan_once(tmp_path, dataset_on_s3, wan):
    url, shard_bytes, index_bytes = dataset_on_s3
    stop_wan = wan("--delay-ms", "10")
    peers = [f"127.0.0.1:{p}" for p in _free_ports(NODES)]
    results = _finish(tmp_path, _start_nodes(tmp_path, url, peers))
    crossed = stop_wan()
    seen = sorted(i for r in results for i in r["ids"])
    assert seen == list(range(SAMPLES))
    # Each node read a quarter, and most of what it read came from the others' caches.
    assert sum(r["peer_bytes"] for r in results) > shard_bytes // 2, results
    # (A reply can be sent and not taken: a download stopped because its reader moved on.)
    assert sum(r["peer_bytes"] for r in results) <= sum(r["served"] for r in results)
    assert all(r["failovers"] == 0 for r in results), results
    # Through the WAN: every shard once, each node's index.json, its first batch read by range
    # while the shards download (docs/streaming.md), and the replies' headers.
    assert crossed["bytes_to_client"] >= shard_bytes
    first_batches = NODES * 8 * 3500
    assert crossed["bytes_to_client"] <= (shard_bytes + NODES * index_bytes + first_batches
                                          + crossed["requests"] * 1024), crossed
    # Without peers every node would fetch the shards its samples are in: most of them twice
    # or more here (a shuffled quarter of the samples touches most shards).
    assert crossed["bytes_to_client"] < 1.2 * shard_bytes


def test_compressed_shards_cross_the_wan_once_too(tmp_path, s3rver, wan):
    # Each node keeps the compressed form of the shards it owns, which the others ask it for.
    source = tmp_path / "source"
    names = write_samples(source, SAMPLES, _blob, 1 << 17, compression="zstd")
    zips = [n for n in names if n.endswith(".zstd")]
    assert len(zips) >= 16, names
    url = upload_dataset(source, f"s3://{s3rver['bucket']}/python/peers/{uuid.uuid4().hex[:12]}")
    zip_bytes = sum((source / n).stat().st_size for n in zips)
    index_bytes = (source / "index.json").stat().st_size
    stop_wan = wan("--delay-ms", "10")
    peers = [f"127.0.0.1:{p}" for p in _free_ports(NODES)]
    results = _finish(tmp_path, _start_nodes(tmp_path, url, peers))
    crossed = stop_wan()
    assert sorted(i for r in results for i in r["ids"]) == list(range(SAMPLES))
    assert all(r["failovers"] == 0 for r in results), results
    assert sum(r["peer_bytes"] for r in results) > zip_bytes // 2, results
    # Every compressed shard once (a shuffled quarter of the samples touches most shards: each
    # node would fetch most of them itself), and each node's index.json.
    shards = crossed["body_bytes_to_client"] - NODES * index_bytes
    assert zip_bytes <= shards <= 1.1 * zip_bytes, (crossed, zip_bytes)
    for node in range(NODES):
        kept = [n for n in zips if (tmp_path / f"node{node}" / n).exists()]
        assert 0 < len(kept) < len(zips), (node, kept)


def test_a_node_killed_mid_epoch_costs_the_others_nothing(tmp_path, dataset_on_s3, wan):
    url, shard_bytes, _ = dataset_on_s3
    # 2 MB/s: the epoch's ~3.5 MB take a couple of seconds, so the kill lands mid-epoch.
    stop_wan = wan("--delay-ms", "10", "--total-mbps", "2")
    peers = [f"127.0.0.1:{p}" for p in _free_ports(NODES)]
    procs = _start_nodes(tmp_path, url, peers)
    # Once every node listens (its dataset open), the epoch is under way.
    deadline = time.monotonic() + 60
    while not all(_listens(p) for p in peers):
        assert time.monotonic() < deadline, "the nodes did not start"
        time.sleep(0.05)
    time.sleep(0.7)
    assert procs[3].poll() is None, "node 3 finished before it could be killed"
    procs[3].send_signal(signal.SIGKILL)
    procs[3].wait()
    results = _finish(tmp_path, procs[:3])
    stop_wan()
    seen = sorted(i for r in results for i in r["ids"])
    # Each survivor read its whole share, every sample's bytes right (checked in the node).
    assert len(seen) == len(set(seen)) == 3 * SAMPLES // NODES
    assert sum(r["failovers"] for r in results) >= 1, results


def test_serve_cache_serves_a_filled_cache_folder_only_with_the_token(tmp_path):
    import urllib.error
    import urllib.request

    import ferry
    from ferry import _cli

    source = tmp_path / "source"
    names = write_samples(source, 200, _blob, 1 << 16)
    cache = tmp_path / "cache"
    dataset = ferry.StreamingDataset(remote=str(source), local=str(cache / "train"), batch_size=8)
    assert sum(1 for _ in dataset) == 200
    port = _free_ports(1)[0]
    server = subprocess.Popen([_cli.executable(), "serve-cache", str(cache),
                               "--listen", f"127.0.0.1:{port}"],
                              env=dict(os.environ, FERRY_PEER_TOKEN=TOKEN),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not _listens(f"127.0.0.1:{port}"):
            assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
            time.sleep(0.05)
        serving = server.stderr.readline()  # "serving FOLDER (N shards) as ID"
        assert serving.startswith(f"serving {cache / 'train'} "), serving
        shard = next(n for n in names if n.startswith("shard."))
        url = f"http://127.0.0.1:{port}/ferry/v1/{serving.split()[-1]}/{shard}"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.read() == (source / shard).read_bytes()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)
        assert refused.value.code == 401
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(urllib.request.Request(
                url.replace(shard, "index.json"),
                headers={"Authorization": f"Bearer {TOKEN}"}), timeout=10)
        assert missing.value.code == 404
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=10) == 0


def test_torch_discovery_gathers_one_peer_per_node_and_shares_a_token(tmp_path, monkeypatch):
    import torch.distributed as torch_distributed
    from ferry import _peers

    monkeypatch.delenv("FERRY_PEER_TOKEN", raising=False)
    port = _free_ports(1)[0]
    torch_distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                         rank=0, world_size=1)
    try:
        resolved = _peers.resolve("torch", None, None, 17791)
        host = socket.gethostname()
        assert resolved["addresses"] == [f"{host}:17791"]
        assert resolved["self"] == f"{host}:17791"
        assert len(resolved["token"]) == 32  # drawn by rank 0
        assert _peers.resolve("torch", None, "given-token", 17791)["token"] == "given-token"
    finally:
        torch_distributed.destroy_process_group()
    with pytest.raises(ferry.errors.InvalidArgumentError, match="torch.distributed"):
        _peers.resolve("torch", None, None, 17791)
    with pytest.raises(ferry.errors.InvalidArgumentError, match="peer_port"):
        _peers.resolve(["a:1"], None, None, 0)
