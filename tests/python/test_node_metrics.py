"""Node-wide counters (ferry.metrics(local=...)): what every process reading a cache folder
counted, summed - DataLoader workers included, after they have exited."""

import os

import torch.utils.data

import ferry
from conftest import upload_dataset
from ferry import _ferry


def _upload(tmp_path, s3rver, samples=400):
    data = tmp_path / "data"
    with ferry.MDSWriter(out=str(data), columns={"data": "bytes", "label": "int"},
                         size_limit=1 << 16) as w:
        for i in range(samples):
            w.write({"data": os.urandom(2000), "label": i})
    url = upload_dataset(data, f"s3://{s3rver['bucket']}/python/node-metrics/{tmp_path.name}")
    shard_bytes = sum(os.path.getsize(data / n) for n in os.listdir(data) if n.endswith(".mds"))
    return url, shard_bytes


def test_two_workers_counters_sum_to_what_the_server_sent(tmp_path, s3rver, wan):
    url, shard_bytes = _upload(tmp_path, s3rver)
    counting_link = wan()  # no limits: it counts what went through
    cache = tmp_path / "cache"
    mine_before = ferry.metrics()
    ds = ferry.StreamingDataset(remote=url, local=str(cache), batch_size=8)
    loader = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2)
    labels = [int(x) for batch in loader for x in batch["label"]]
    assert sorted(labels) == list(range(400))
    del loader  # its workers have exited
    link = counting_link()

    mine = ferry.metrics()
    node = _ferry.node_metrics(str(cache))
    total = node["values"]
    # This process only opened the dataset: its own counters miss what the workers fetched.
    name = "/ferry/cache/downloaded_bytes"
    assert mine.get(name, 0) - mine_before.get(name, 0) == 0
    assert total["/ferry/cache/downloaded_bytes"] == shard_bytes
    assert node["exited"]["/ferry/cache/downloaded_bytes"] == shard_bytes
    assert total["/ferry/stream/samples"] == 400
    # Every byte the store read crossed the link; the link carried headers besides.
    body = total["/ferry/storage/s3/bytes_read"]
    assert shard_bytes < body <= link["bytes_to_client"]
    assert link["bytes_to_client"] - body <= 2048 * link["requests"], (body, link)
    # The exited workers' gauges are gone; the main process is the one left.
    assert [p["pid"] for p in node["processes"]] == [os.getpid()]
    assert total.get("/ferry/stream/bytes_in_flight", 0) == 0
    # The same keys as a process's own metrics.
    assert ferry.metrics(local=cache) == total


def test_workers_are_labelled_and_seen_while_they_read(tmp_path, s3rver):
    url, _ = _upload(tmp_path, s3rver, samples=100)
    cache = tmp_path / "cache"
    ds = ferry.StreamingDataset(remote=url, local=str(cache), batch_size=4)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    seen = []
    for i, _ in enumerate(loader):
        if i == 5:
            seen = _ferry.node_metrics(str(cache))["processes"]
    labels = sorted(p["label"].split(" ", 1)[-1] for p in seen if p["pid"] != os.getpid())
    assert labels == ["worker 0/2", "worker 1/2"], seen


def _scrape(port):
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def test_prometheus_endpoint_serves_the_node_sums_while_open(tmp_path, s3rver):
    import urllib.error

    import pytest

    url, shard_bytes = _upload(tmp_path, s3rver, samples=100)
    cache = tmp_path / "cache"
    ds = ferry.StreamingDataset(remote=url, local=str(cache), batch_size=8)
    assert sum(1 for _ in torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2)) == 13
    server = ferry.serve_metrics(0, local=cache)
    text = _scrape(server.port)
    line = f'ferry_cache_downloaded_bytes_total{{folder="{cache}"}} {shard_bytes}'
    assert "# TYPE ferry_cache_downloaded_bytes_total counter" in text
    assert line in text.splitlines(), text
    assert f'ferry_storage_bytes_read_total{{folder="{cache}",store="s3"}}' in text
    assert "# TYPE ferry_storage_in_flight gauge" in text
    own = ferry.serve_metrics(0)  # this process's own counters, no folder label
    assert 'ferry_storage_requests_total{store="s3"} ' in _scrape(own.port)
    own.close()
    port = server.port
    server.close()
    with pytest.raises(urllib.error.URLError):
        _scrape(port)
