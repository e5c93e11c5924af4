"""ferry.convert: a pandas and a Dask DataFrame into MDS (read back equal to the frame, with
Mosaic's index layout), and a 2,000-file ImageFolder on the S3 test server converted on a Dask
LocalCluster into another bucket - equal, sample for sample, to one `ferry convert` - also when
a worker is killed in the middle."""

import json
import os
import subprocess
import threading
import time
import uuid

# pandas, dask and distributed come from Debian (scripts/install-deps.sh): without them these
# tests fail to import rather than skip.
import dask.dataframe as dd
import distributed
import numpy as np
import pandas as pd
import pytest

import ferry
from ferry import _cli
from ferry.convert import dataframe_to_mds, files_to_mds


def _frame(n=257):
    return pd.DataFrame({
        "id": np.arange(n, dtype=np.int64),
        "score": np.linspace(0, 1, n, dtype=np.float64),
        "name": [f"sample {i} \u00e9" for i in range(n)],
        "blob": [bytes([i % 256]) * (i % 7) for i in range(n)],
    })


def _read_back(local):
    ds = ferry.StreamingDataset(local=str(local), batch_size=1)
    return [(int(s["id"]), float(s["score"]), s["name"], bytes(s["blob"])) for s in
            (ds[i] for i in range(len(ds)))]


def _expected(frame):
    return [(int(r.id), float(r.score), r.name, r.blob) for r in frame.itertuples()]


def test_a_pandas_frame_reads_back_equal_with_mosaics_layout(tmp_path):
    frame = _frame()
    # An attempt that lost (a partial part) is deleted; a folder that is no attempt stays.
    (tmp_path / "mds" / "part-00000.0123456789ab").mkdir(parents=True)
    (tmp_path / "mds" / "part-notes").mkdir()
    out, failed = dataframe_to_mds(frame, mds_kwargs={"out": str(tmp_path / "mds"),
                                                      "size_limit": "2kb"})
    assert not (tmp_path / "mds" / "part-00000.0123456789ab").exists()
    assert (tmp_path / "mds" / "part-notes").is_dir()
    assert failed == 0 and out == str(tmp_path / "mds")
    assert _read_back(tmp_path / "mds") == _expected(frame)
    index = json.loads((tmp_path / "mds" / "index.json").read_text())
    assert index["version"] == 2 and len(index["shards"]) > 1
    # Mosaic's merged layout: each shard named below the folder of its partition.
    folders = {s["raw_data"]["basename"].split("/")[0] for s in index["shards"]}
    assert len(folders) == 1 and folders.pop().startswith("part-00000.")
    shard = index["shards"][0]
    assert dict(zip(shard["column_names"], shard["column_encodings"])) == {
        "id": "int64", "score": "float64", "name": "str", "blob": "bytes"}


def test_a_dask_frame_on_a_local_cluster_writes_each_partition_once(tmp_path, s3rver):
    frame = _frame(1000)
    url = f"s3://{s3rver['bucket']}/python/convert/{uuid.uuid4().hex[:12]}"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster, \
            distributed.Client(cluster):
        out, _ = dataframe_to_mds(dd.from_pandas(frame, npartitions=5), out=url,
                                  columns={"id": "int64", "score": "float64", "name": "str",
                                           "blob": "bytes"}, size_limit="4kb")
    assert out == url
    ds = ferry.StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=1)
    got = [(int(s["id"]), float(s["score"]), s["name"], bytes(s["blob"])) for s in
           (ds[i] for i in range(len(ds)))]
    assert got == _expected(frame)
    parts = {info.raw_data.basename.split("/")[0] for info in ds.shards}
    assert len(parts) == 5


def test_a_frame_without_columns_it_cannot_type_is_refused(tmp_path):
    frame = pd.DataFrame({"x": [object(), object()]})
    with pytest.raises(ferry.InvalidArgumentError, match="'x'"):
        dataframe_to_mds(frame, out=str(tmp_path / "mds"))
    with pytest.raises(ferry.InvalidArgumentError, match="unknown settings"):
        dataframe_to_mds(_frame(3), out=str(tmp_path / "mds"), progress=True)


def _cat(dataset):
    done = subprocess.run([_cli.executable(), "cat", dataset], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_image_folder_converts_on_a_dask_cluster_despite_a_killed_worker(tmp_path, s3rver):
    import boto3

    root = tmp_path / "images"
    for i in range(2000):
        path = root / f"class{i % 5}" / f"{i:05d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(64 + i % 200))
    run = uuid.uuid4().hex[:12]
    src = f"s3://{s3rver['bucket']}/python/convert-src/{run}"
    subprocess.run([_cli.executable(), "cp", "-r", "-q", str(root), src], check=True)
    bucket = f"ferry-convert-{run}"  # another bucket, as a staged copy would be
    s3 = boto3.client("s3", endpoint_url=s3rver["endpoint"], aws_access_key_id=s3rver["key"],
                      aws_secret_access_key=s3rver["secret"], region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)

    def written():
        return [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix="mds/") for o in page.get("Contents", [])]

    out = f"s3://{bucket}/mds"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster, \
            distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
        address, victim = sorted(pids.items())[0]
        killed = threading.Event()
        assigned = []  # the victim's tasks when it was killed

        def kill_when_parts_run():
            # Once the first shard is in the bucket, every worker is running parts: the
            # victim dies with two of them under way, as a lost machine would.
            deadline = time.monotonic() + 120
            while not written() and time.monotonic() < deadline:
                time.sleep(0.05)
            assigned.extend(client.processing(workers=[address]).get(address, []))
            os.kill(victim, 9)
            killed.set()

        killer = threading.Thread(target=kill_when_parts_run)
        killer.start()
        start = time.monotonic()
        files_to_mds(src, out, parts=12, client=client, size_limit="64kb")
        killed_before_the_end = killed.is_set()
        killer.join()
    assert killed_before_the_end, "the worker died while the conversion ran"
    assert assigned, "the worker held parts when it died: Dask ran them again elsewhere"
    assert time.monotonic() - start < 240
    whole = tmp_path / "whole"
    subprocess.run([_cli.executable(), "convert", src, str(whole), "-q", "--size-limit", "64kb"],
                   check=True)
    assert _cat(out) == _cat(str(whole)), "sample for sample: keys, labels, bytes"
    assert _cat(out).count("\n") == 2000
    # A part the killed worker had started may have left an attempt of its own (its ferry
    # convert, orphaned, may even finish): at least one attempt per part, one of each merged.
    attempts = {k.split("/")[1] for k in written() if k.count("/") >= 2}
    assert len(attempts) >= 12
