"""ferry.StreamingDataset under torch's DataLoader and simulated torch.distributed ranks, and
ferry.StreamingDataLoader's exact resumption; bad input is a clear, mapped exception."""

import os
import pathlib
import subprocess
import time

import numpy as np
import pytest
import torch.utils.data

import ferry

ROOT = pathlib.Path(__file__).resolve().parents[2]
N = 480  # 480 = 2 ranks x 2 workers x 4 batch x 30: no padding in the shapes used below


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("data") / "ds"
    with ferry.MDSWriter(out=str(out), columns={"id": "int", "blob": "bytes"},
                         size_limit="2kb", hashes=["xxh64"]) as writer:
        for i in range(N):
            writer.write({"id": i, "blob": bytes([i % 251]) * (i % 37)})
    return out


def _ids(batches):
    out = []
    for batch in batches:
        out.extend(int(i) for i in batch["id"])
    return out


def _check(sample):
    i = int(sample["id"])
    assert sample["blob"] == bytes([i % 251]) * (i % 37)


def test_samples_are_dicts_with_len_and_random_access(dataset_dir):
    ds = ferry.StreamingDataset(batch_size=1, local=str(dataset_dir))
    assert len(ds) == N and ds.num_samples == N
    assert ds.columns == ["blob", "id"]
    assert ds[7] == {"id": 7, "blob": bytes([7]) * 7}
    assert ds[-1]["id"] == N - 1
    with pytest.raises(IndexError):
        ds[N]
    assert [s["id"] for s in ds] == list(range(N))  # no shuffle: shard order


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_workers_read_each_sample_once_per_epoch(dataset_dir, workers):
    ds = ferry.StreamingDataset(local=str(dataset_dir), shuffle=True, batch_size=4)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=workers)
    epochs = [_ids(loader) for _ in range(2)]
    for ids in epochs:
        assert sorted(ids) == list(range(N))
    assert epochs[0] != epochs[1], "each epoch is shuffled differently"
    # The same seed gives the same order in a new dataset object.
    again = ferry.StreamingDataset(local=str(dataset_dir), shuffle=True, batch_size=4)
    assert _ids(torch.utils.data.DataLoader(again, batch_size=4, num_workers=workers)) == epochs[0]
    for sample in ds:
        _check(sample)


@pytest.mark.parametrize("world_size, local_world", [(2, 2), (2, 1), (4, 2)])
def test_ranks_split_the_epoch_without_overlap(dataset_dir, monkeypatch, world_size, local_world):
    per_rank = []
    for rank in range(world_size):
        monkeypatch.setenv("WORLD_SIZE", str(world_size))
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("LOCAL_WORLD_SIZE", str(local_world))
        monkeypatch.setenv("LOCAL_RANK", str(rank % local_world))
        ds = ferry.StreamingDataset(local=str(dataset_dir), shuffle=True, batch_size=4,
                                    num_canonical_nodes=4)
        assert len(ds) == N // world_size
        per_rank.append(_ids(torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2)))
    assert all(len(ids) == N // world_size for ids in per_rank)
    union = [i for ids in per_rank for i in ids]
    assert sorted(union) == list(range(N)), "together the ranks read every sample once"


def _loader(dataset_dir, workers):
    ds = ferry.StreamingDataset(local=str(dataset_dir), shuffle=True, batch_size=4,
                                shuffle_algo="py1b", shuffle_block_size=64)
    return ferry.StreamingDataLoader(ds, batch_size=4, num_workers=workers)


def _take(loader, k):
    out = []
    for batch in loader:
        out.append([int(i) for i in batch["id"]])
        if len(out) == k:
            break
    return out


@pytest.mark.parametrize("workers", [0, 2, 3])
def test_state_dict_resumes_exactly_where_it_stopped(dataset_dir, workers):
    full = _take(_loader(dataset_dir, workers), 10**9)
    assert sorted(i for b in full for i in b) == list(range(N))
    for stops in ([1], [5], [7, 3], [2, 2, 9], [len(full) - 1]):
        got, state = [], None
        for k in stops:
            loader = _loader(dataset_dir, workers)
            if state is not None:
                loader.load_state_dict(state)
            got += _take(loader, k)
            state = loader.state_dict()
            assert state["sample_in_epoch"] == 4 * len(got) and state["epoch"] == 0
        loader = _loader(dataset_dir, workers)
        loader.load_state_dict(state)
        got += _take(loader, 10**9)
        assert got == full, f"stopped after {stops} batches"


def test_a_state_at_the_end_of_an_epoch_resumes_into_the_next(dataset_dir):
    loader = _loader(dataset_dir, 2)
    first = _take(loader, 10**9)
    state = loader.state_dict()
    second = _take(loader, 10**9)  # the next epoch, uninterrupted
    resumed = _loader(dataset_dir, 2)
    resumed.load_state_dict(state)
    assert _take(resumed, 10**9) == second != first


def test_a_remote_dataset_streams_through_the_cache(tmp_path, s3rver):
    url = f"s3://{s3rver['bucket']}/python/{tmp_path.name}"

    with ferry.MDSWriter(out=url, columns={"id": "int", "x": "ndarray:float32:3"},
                         size_limit="1kb") as writer:
        for i in range(200):
            writer.write({"id": i, "x": np.full(3, i, np.float32)})
            time.sleep(0.002)
        shards_before_finish = len(writer.uploaded)
    assert shards_before_finish > 0, "shards are uploaded while the writer is still writing"
    assert len(writer.uploaded) > shards_before_finish
    assert not pathlib.Path(writer.local).exists(), "the temporary local copy is removed"

    def requests():
        return sum(v for k, v in ferry.metrics().items()
                   if k.startswith("/ferry/storage/s3/") and k.endswith("/requests"))

    ds = ferry.StreamingDataset(batch_size=1, remote=url, local=str(tmp_path / "cache"), shuffle=True)
    first = [int(s["id"]) for s in ds]
    assert sorted(first) == list(range(200))
    # Under workers, then in this process (whose request counter this is).
    second = [int(s["id"]) for s in torch.utils.data.DataLoader(ds, batch_size=None,
                                                                num_workers=2)]
    assert sorted(second) == list(range(200))
    before = requests()
    third = [int(s["id"]) for s in ds]
    assert sorted(third) == list(range(200))
    assert before > 0 and requests() == before, "a later epoch is served by the cache"
    np.testing.assert_array_equal(ds[17]["x"], np.full(3, 17, np.float32))


def test_a_dataset_in_a_databricks_volume_is_written_and_streamed(tmp_path, databricks):
    # Mosaic's spelling of a Unity Catalog volume, with a service principal's OAuth tokens.
    url = f"dbfs:{databricks['volume']}/python/{tmp_path.name}"
    with ferry.MDSWriter(out=url, columns={"id": "int"}, size_limit="1kb") as writer:
        for i in range(150):
            writer.write({"id": i})
    assert len(writer.uploaded) > 1
    ds = ferry.StreamingDataset(batch_size=1, remote=url, local=str(tmp_path / "cache"),
                                shuffle=True)
    ids = [int(s["id"]) for s in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)]
    assert sorted(ids) == list(range(150))
    assert int(ds[149]["id"]) == 149


@pytest.mark.parametrize("kwargs, error, match", [
    ({"shuffle_algo": "best"}, ValueError, "best"),
    ({"cache_limit": -1}, ValueError, "cache_limit"),
    ({"cache_limit": "huge"}, ValueError, "huge"),
    ({"predownload": 0}, ValueError, "predownload"),
    ({"download_parts": 0}, ValueError, "download_parts"),
    ({"node_download_concurrency": 0}, ValueError, "node_download_concurrency"),
    ({"node_download_concurrency": 2**32}, ValueError, "node_download_concurrency"),
    ({"download_parts": 2**32}, ValueError, "download_parts"),
    ({"download_parts": 65}, ValueError, "download_parts must be 1 to 64"),
    ({"download_concurrency": 0}, ValueError, "download_concurrency must be at least 1"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"image_format": "jpeg"}, ValueError, "image_format"),
    ({"sampling_method": "random"}, ValueError, "Invalid sampling method: random"),
    ({"validate_hash": "crc32"}, ValueError, "crc32"),
])
def test_bad_options_are_clear_errors(dataset_dir, kwargs, error, match):
    with pytest.raises(error, match=match):
        ds = ferry.StreamingDataset(local=str(dataset_dir), **kwargs)
        list(ds)


@pytest.mark.parametrize("kwargs, match", [
    ({"batching_method": "bogus"},
     "batching_method bogus is not one of random, per_stream, stratified, device_per_stream"),
    ({"partition_algo": "best"}, "partition_algo best is not one of relaxed, orig"),
    ({"sampling_granularity": 0}, "sampling_granularity must be at least 1, got 0"),
    ({"sampling_granularity": -2}, "sampling_granularity must be at least 1, got -2"),
])
def test_mosaic_options_ferry_does_not_use_are_still_checked(dataset_dir, kwargs, match):
    with pytest.raises(ferry.InvalidArgumentError, match=match):
        ferry.StreamingDataset(local=str(dataset_dir), **kwargs)


@pytest.mark.parametrize("make, name", [
    # A list of remotes is one dataset's mirrors: each must be a URL or a path too.
    (lambda d: ferry.StreamingDataset(batch_size=1, remote=[7, str(d)], local="/tmp/x"), "remote"),
    (lambda d: ferry.StreamingDataset(batch_size=1, remote=(str(d), 5)), "mirrors"),
    (lambda d: ferry.StreamingDataset(batch_size=1, local=[str(d)]), "local"),
    (lambda d: ferry.StreamingDataset(batch_size=1, local=str(d), split=7), "split"),
    (lambda d: ferry.Stream(remote=[b"s3://b/x"]), "remote"),
    (lambda d: ferry.Stream(local={"path": str(d)}), "local"),
])
def test_a_remote_or_local_that_is_not_a_string_is_refused_naming_it(dataset_dir, make, name):
    with pytest.raises(ferry.InvalidArgumentError, match=f"^{name} must be a URL or a path") as e:
        make(dataset_dir)
    if "list" in str(e.value) or "tuple" in str(e.value):
        assert "streams=[Stream(" in str(e.value)


def test_paths_and_streams_are_checked(dataset_dir):
    # A pathlib path is a path; a stream that is not a Stream is an error, not an AttributeError.
    assert len(ferry.StreamingDataset(batch_size=1, local=dataset_dir)) == N
    assert len(ferry.StreamingDataset(batch_size=1, streams=[ferry.Stream(local=dataset_dir)])) == N
    with pytest.raises(ferry.InvalidArgumentError, match="streams must be ferry.Stream objects"):
        ferry.StreamingDataset(batch_size=1, streams=[{"local": str(dataset_dir)}])


def test_download_parts_reaches_the_engine(dataset_dir):
    ds = ferry.StreamingDataset(batch_size=1, local=str(dataset_dir), download_parts=2)
    assert [s["id"] for s in ds] == list(range(N))


def test_node_download_concurrency_is_shared_by_the_workers(dataset_dir, tmp_path):
    # One slot for the whole node: two DataLoader workers (two processes) download through it
    # one shard at a time, and every sample still arrives.
    cache = tmp_path / "cache"
    ds = ferry.StreamingDataset(batch_size=1, remote=str(dataset_dir), local=str(cache), shuffle=True,
                                node_download_concurrency=1)
    ids = [int(s["id"]) for s in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)]
    assert sorted(ids) == list(range(N))
    assert sorted(p.name for p in (cache / ".ferry" / "slots").iterdir()) == ["0"]


def test_missing_data_is_not_found_naming_the_path(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        ferry.StreamingDataset(batch_size=1, local=str(tmp_path / "nothing"))
    assert isinstance(raised.value, ferry.NotFoundError)
    assert str(tmp_path / "nothing") in str(raised.value)


def test_streams_and_remote_are_exclusive(dataset_dir):
    with pytest.raises(ValueError, match="either streams"):
        ferry.StreamingDataset(batch_size=1, streams=[ferry.Stream(local=str(dataset_dir))], local="x")
    with pytest.raises(ValueError, match="at most one"):
        ferry.Stream(local=str(dataset_dir), repeat=2, choose=3)


def test_streams_mix_by_choose(dataset_dir):
    ds = ferry.StreamingDataset(batch_size=1, streams=[ferry.Stream(local=str(dataset_dir), choose=100),
                                         ferry.Stream(local=str(dataset_dir), repeat=0.5)])
    ids = [int(s["id"]) for s in ds]
    assert len(ids) == 100 + N // 2


def _two_shards_of_4mb(tmp_path, s3rver):
    """Uploads 120 samples of 64 KB in two shards of 4 MB: the URL."""
    url = f"s3://{s3rver['bucket']}/python/{tmp_path.name}"
    with ferry.MDSWriter(out=str(tmp_path / "ds"), columns={"id": "int", "blob": "bytes"},
                         size_limit="4mb") as writer:
        for i in range(120):
            writer.write({"id": i, "blob": bytes([i]) * (64 << 10)})
    subprocess.run([str(ROOT / os.environ.get("FERRY_PYTHON_BUILD", "build/release") / "src" /
                         "cli" / "ferry"), "cp", "-r", "-q", str(tmp_path / "ds"), url],
                   check=True, env={**os.environ, "AWS_ENDPOINT_URL": s3rver["endpoint"]})
    return url


def test_ctrl_c_interrupts_a_wait_for_a_download(tmp_path, s3rver, slow_link,
                                                 seconds_to_interrupt):
    # Two shards of 4 MB at 1 MB/s: after the first sample (read by range) the next waits about
    # four seconds for its shard. Ctrl+C must not wait for it.
    ds = ferry.StreamingDataset(batch_size=1, remote=_two_shards_of_4mb(tmp_path, s3rver),
                                local=str(tmp_path / "cache"), shuffle=True)
    read = []

    def iterate():
        for sample in ds:
            assert sample["blob"] == bytes([int(sample["id"])]) * (64 << 10)
            read.append(int(sample["id"]))

    interrupted_after = seconds_to_interrupt(iterate, 1.0)
    assert 1.0 <= interrupted_after < 2.5, interrupted_after
    assert len(read) < 60, "the interrupt came while a shard was still on its way"


def test_ctrl_c_interrupts_random_access_waiting_for_a_download(tmp_path, s3rver, slow_link,
                                                                seconds_to_interrupt):
    # With download_on_access, ds[i] fetches the whole 4 MB shard at 1 MB/s; Ctrl+C ends the
    # wait, and nothing is published as the shard.
    ds = ferry.StreamingDataset(batch_size=1, remote=_two_shards_of_4mb(tmp_path, s3rver),
                                local=str(tmp_path / "cache"), download_on_access=True)
    interrupted_after = seconds_to_interrupt(lambda: ds[3], 1.0)
    assert 1.0 <= interrupted_after < 2.5, interrupted_after
    assert not (tmp_path / "cache" / "shard.00000.mds").exists()


def test_random_access_reads_samples_by_range_not_shards(tmp_path, s3rver, slow_link):
    # By default ds[i] of a shard not in the cache reads the shard's offset table, then the
    # sample: about 64 KB at 1 MB/s, where its 4 MB shard would take four seconds.
    ds = ferry.StreamingDataset(batch_size=1, remote=_two_shards_of_4mb(tmp_path, s3rver),
                                local=str(tmp_path / "cache"))

    def s3(name):
        return sum(v for k, v in ferry.metrics().items()
                   if k.startswith("/ferry/storage/s3/") and k.endswith("/" + name))

    requests, received = s3("requests"), s3("bytes_read")
    start = time.monotonic()
    for i in (3, 100):  # one sample of each shard
        assert ds[i]["blob"] == bytes([i]) * (64 << 10)
    assert time.monotonic() - start < 3.0
    assert s3("requests") - requests == 2 + 2, "an offset table per shard, a request per sample"
    assert s3("bytes_read") - received < 3 * (64 << 10)
    assert not list((tmp_path / "cache").glob("shard.*.mds")), "no shard fetched whole"
    # A second sample of a shard: it is likely asked for again, and comes whole.
    assert ds[7]["blob"] == bytes([7]) * (64 << 10)
    assert (tmp_path / "cache" / "shard.00000.mds").exists()


def test_a_cache_limit_too_small_for_the_shuffle_narrows_it_or_refuses(dataset_dir, tmp_path,
                                                                        capfd):
    total = sum(p.stat().st_size for p in dataset_dir.glob("shard.*.mds"))
    # The least a cache_limit may be (as Mosaic's): index.json and four of the largest shard.
    limit = ((dataset_dir / "index.json").stat().st_size
             + 4 * max(p.stat().st_size for p in dataset_dir.glob("shard.*.mds")))
    assert limit < total
    args = dict(remote=str(dataset_dir), shuffle=True, batch_size=4, cache_limit=limit)
    strict = ferry.StreamingDataset(local=str(tmp_path / "strict"), strict_cache_limit=True,
                                    **args)
    with pytest.raises(ferry.FailedPreconditionError, match="a cache_limit of"):
        next(iter(strict))
    ds = ferry.StreamingDataset(local=str(tmp_path / "narrow"), **args)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    assert sorted(_ids(loader)) == list(range(N))
    # Each worker process said what it read instead (the warning goes to stderr).
    assert "reading with shuffle_algo" in capfd.readouterr().err


def test_a_cache_folder_serves_one_remote_and_offline_reads_it_without(dataset_dir, tmp_path):
    import shutil
    remote = tmp_path / "remote"
    shutil.copytree(dataset_dir, remote)
    other = tmp_path / "other"
    shutil.copytree(dataset_dir, other)
    cache = str(tmp_path / "cache")
    assert len(list(ferry.StreamingDataset(batch_size=1, remote=str(remote), local=cache))) == N
    with pytest.raises(ferry.FailedPreconditionError, match="not file://"):
        ferry.StreamingDataset(batch_size=1, remote=str(other), local=cache)
    shutil.rmtree(remote)  # the remote is gone: only the cached copy is left
    with pytest.raises(ferry.NotFoundError):
        ferry.StreamingDataset(batch_size=1, remote=str(remote), local=cache)
    offline = ferry.StreamingDataset(batch_size=1, remote=str(remote), local=cache, offline=True)
    assert [s["id"] for s in offline] == list(range(N))
