"""The cache as a Mosaic Streaming user sees it: cache_limit checked at open and counting
index.json, a shard deleted under the readers fetched again, ``remote == local`` read in place,
and the cache by hand (``cache_usage``, ``prepare_shard``, ``evict_shard``,
``evict_coldest_shard``, ``shards``)."""

import json
import os
import pathlib
import time

import numpy as np
import pytest
import torch.utils.data

import ferry


def _write(out, n=1000, size_limit=2048, compression=None, hashes=None):
    with ferry.MDSWriter(out=str(out), columns={"id": "str", "sample": "int"},
                         compression=compression, hashes=hashes, size_limit=size_limit) as w:
        for i in range(n):
            w.write({"id": f"{i:06}", "sample": 3 * i})
    return out


def _bytes_under(folder):
    return sum(p.stat().st_size for p in pathlib.Path(folder).rglob("*") if p.is_file())


def _shard_files(folder):
    return sorted(p.name for p in pathlib.Path(folder).iterdir()
                  if p.is_file() and p.name != "index.json")


def test_a_cache_limit_the_index_files_fill_is_a_value_error(tmp_path):
    remote = _write(tmp_path / "remote")
    with pytest.raises(ValueError, match="Minimum cache usage.*is larger than the cache limit"):
        ferry.StreamingDataset(remote=str(remote), local=str(tmp_path / "cache"),
                               cache_limit="2048", batch_size=4)


@pytest.mark.parametrize("compression", [None, "zstd:7"])
def test_a_cache_limit_below_four_shards_is_a_value_error(tmp_path, compression):
    remote = _write(tmp_path / "remote", compression=compression)
    with pytest.raises(ValueError,
                       match="Cache limit.*is too low. Increase the `cache_limit` to"):
        ferry.StreamingDataset(remote=str(remote), local=str(tmp_path / "cache"),
                               cache_limit="5kb", batch_size=4)


@pytest.mark.parametrize("compression,keep_zip,limit,cache_limit", [
    (None, False, "100kb", 100 << 10), ("zstd", False, "100kb", 100 << 10),
    ("zstd", True, "120kb", 120 << 10)])
def test_the_cache_folder_stays_within_cache_limit_counting_index_json(
        tmp_path, compression, keep_zip, limit, cache_limit):
    # Mosaic's eviction test: 5,000 one-byte samples in 500-byte shards. Their index.json is over
    # a third of the limit; counted, the shards get what it leaves (Mosaic keeps 129 of 139).
    remote, local = tmp_path / "remote", tmp_path / "cache"
    with ferry.MDSWriter(out=str(remote), columns={"data": "bytes"}, compression=compression,
                         size_limit=500) as w:
        for _ in range(5000):
            w.write({"data": b"\0"})
    index = json.loads((remote / "index.json").read_text())
    assert len(index["shards"]) == 139
    ds = ferry.StreamingDataset(remote=str(remote), local=str(local), keep_zip=keep_zip,
                                cache_limit=limit, batch_size=1)
    loader = torch.utils.data.DataLoader(ds, num_workers=2)
    for _ in range(2):
        assert sum(1 for _ in loader) == 5000
    # The documented slack (docs/streaming.md, "Slack"): downloads in flight in the other worker
    # are not seen by a scan, so two readers may end one shard (both its files) over the limit.
    shard = max(s["raw_data"]["bytes"] + ((s.get("zip_data") or {}).get("bytes", 0))
                for s in index["shards"])
    assert _bytes_under(local) <= cache_limit + shard, "the folder, ferry's records and all"
    raw = [p for p in local.iterdir() if p.suffix == ".mds"]
    room = cache_limit - (local / "index.json").stat().st_size
    assert len(raw) <= room // index["shards"][0]["raw_data"]["bytes"]
    assert len(raw) < 139, "evicted"
    assert ds.cache_usage == sum(p.stat().st_size for p in local.iterdir() if p.is_file())
    assert ds.cache_usage <= cache_limit


def test_a_shard_deleted_while_read_is_fetched_again_in_that_epoch(tmp_path):
    # Mosaic's test_accidental_shard_delete, read to the end of the epoch.
    remote = _write(tmp_path / "remote", n=117, size_limit=1024)
    local = tmp_path / "cache"
    shard0 = local / "shard.00000.mds"
    # Random access fetches whole shards, as Mosaic's does (ferry's default reads by range).
    ds = ferry.StreamingDataset(remote=str(remote), local=str(local), batch_size=1,
                                download_on_access=True)
    assert ds.samples_per_shard[0] >= 8
    # Shard 0 in the cache first, so that it is deleted at the first sample, with the rest of
    # it still to read: an iterator hears of deletions at its drains, which come at every
    # sample of a young iterator and then every 2, 4, 8 (src/stream/open_shards.h). Deleted
    # only when its last samples are read - when it lands that late - no reader would need it
    # again in the epoch.
    ds[0]
    ids = []
    for sample in ds:
        ids.append(sample["id"])
        if len(ids) == 1:
            shard0.unlink()
    assert ids == [f"{i:06}" for i in range(117)]
    assert shard0.exists(), "fetched again when next read"
    # Random access after another deletion fetches it too.
    shard0.unlink()
    time.sleep(0.001)  # random access hears of deletions at most every 20 us
    assert ds[1]["sample"] == 3
    assert shard0.exists()


def test_a_shard_deleted_from_a_dataset_without_remote_is_not_found_naming_it(tmp_path):
    data = _write(tmp_path / "data")
    ds = ferry.StreamingDataset(local=str(data), batch_size=1)
    last = data / ds.shards[-1].raw_data.basename
    last.unlink()
    with pytest.raises(FileNotFoundError, match=str(last)):
        ds[ds.num_samples - 1]


@pytest.mark.parametrize("compression", [None, "zstd:7"])
@pytest.mark.parametrize("url", [False, True])
def test_remote_equal_to_local_reads_the_folder_in_place(tmp_path, compression, url):
    data = _write(tmp_path / "data", n=117, size_limit=256, compression=compression)
    before = set(os.listdir(data))
    remote = f"file://{data}" if url else str(data)
    # The least cache_limit Mosaic accepts: it would evict most of a remote dataset.
    largest = max(shard.get_max_size() for shard in ferry.StreamingDataset(local=str(data)).shards)
    ds = ferry.StreamingDataset(remote=remote, local=str(data), batch_size=1,
                                cache_limit=4 * largest + (data / "index.json").stat().st_size)
    assert [s["sample"] for s in ds] == [3 * i for i in range(117)]
    assert before <= set(os.listdir(data)), "nothing of the dataset was deleted"
    assert not (data / ".ferry" / "origin.json").exists(), "not made a cache of itself"
    with pytest.raises(ferry.FailedPreconditionError, match="only copy"):
        ds.evict_shard(0)
    with pytest.raises(ValueError, match="no shards present locally to evict"):
        ds.evict_coldest_shard()


def test_shards_describe_each_shard_as_mosaic_readers_do(tmp_path):
    remote = _write(tmp_path / "remote", compression="zstd", hashes=["sha1", "xxh64"])
    index = json.loads((remote / "index.json").read_text())["shards"]
    ds = ferry.StreamingDataset(remote=str(remote), local=str(tmp_path / "cache"), batch_size=1)
    assert ds.num_shards == len(ds.shards) == len(index) > 1
    assert ds.size == ds.num_samples == 1000
    assert ds.epoch_size == 1000
    assert ds.samples_per_shard.dtype == np.int64
    assert ds.samples_per_shard.tolist() == [s["samples"] for s in index]
    for shard, want in zip(ds.shards, index):
        assert shard.samples == len(shard) == shard.size == want["samples"]
        assert shard.compression == "zstd"
        assert shard.hashes == ["sha1", "xxh64"]
        assert shard.size_limit == 2048
        assert shard.column_names == want["column_names"]
        assert shard.column_encodings == want["column_encodings"]
        assert shard.column_sizes == want["column_sizes"]
        assert shard.raw_data.basename == want["raw_data"]["basename"]
        assert shard.raw_data.hashes == want["raw_data"]["hashes"]
        assert shard.get_raw_size() == want["raw_data"]["bytes"]
        assert shard.get_zip_size() == want["zip_data"]["bytes"]
        assert shard.get_max_size() == want["raw_data"]["bytes"] + want["zip_data"]["bytes"]
        assert shard.get_persistent_size(keep_zip=False) == want["raw_data"]["bytes"]
        assert shard.file_pairs == [(shard.raw_data, shard.zip_data)]
        assert shard.dirname == str(tmp_path / "cache")


def test_the_cache_by_hand(tmp_path):
    # Mosaic's manual shard eviction: prepare every shard, evict every shard, read them back.
    remote = _write(tmp_path / "remote")
    local = tmp_path / "cache"
    ds = ferry.StreamingDataset(remote=str(remote), local=str(local), batch_size=1)
    index_bytes = (local / "index.json").stat().st_size
    assert ds.cache_usage == index_bytes
    for shard_id in range(ds.num_shards):
        ds.prepare_shard(shard_id)
    full = _shard_files(local)
    assert len(full) == ds.num_shards
    assert ds.cache_usage == index_bytes + sum(s.get_raw_size() for s in ds.shards)
    for shard_id in range(ds.num_shards):
        ds.evict_shard(shard_id)
    assert _shard_files(local) == []
    assert ds.cache_usage == index_bytes
    for sample_id in range(ds.num_samples):
        assert ds[sample_id]["sample"] == 3 * sample_id
    assert _shard_files(local) == full
    # Evicted while the dataset holds them open (ds[i] keeps recent shards mapped).
    ds.evict_shard(np.int64(-1))
    assert len(_shard_files(local)) == ds.num_shards - 1
    # The least recently used go first.
    for shard_id in (2, 0, 1):
        ds.prepare_shard(shard_id, blocking=False)
        time.sleep(0.01)
    for shard_id in range(3, ds.num_shards - 1):
        ds.evict_shard(shard_id)
    ds.evict_coldest_shard()
    assert _shard_files(local) == [ds.shards[0].raw_data.basename,
                                   ds.shards[1].raw_data.basename]
    ds.evict_coldest_shard()
    ds.evict_coldest_shard()
    with pytest.raises(ValueError, match="no shards present locally to evict"):
        ds.evict_coldest_shard()
    with pytest.raises(IndexError):
        ds.prepare_shard(ds.num_shards)


def test_a_shard_being_read_is_not_evicted(tmp_path):
    remote = _write(tmp_path / "remote")
    ds = ferry.StreamingDataset(remote=str(remote), local=str(tmp_path / "cache"), batch_size=1)
    it = iter(ds)
    next(it)  # by range, or from the bytes its download has landed
    shard0 = tmp_path / "cache" / "shard.00000.mds"
    deadline = time.monotonic() + 10
    while not shard0.exists():
        assert time.monotonic() < deadline, "shard 0 was never fetched"
        time.sleep(0.01)
    time.sleep(0.1)  # its fetch has ended: the next sample opens (and pins) the shard's file
    next(it)
    with pytest.raises(RuntimeError, match="shard.00000.mds"):
        ds.evict_shard(0)
    assert (tmp_path / "cache" / "shard.00000.mds").exists()
