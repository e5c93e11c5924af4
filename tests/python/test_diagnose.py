"""ferry.diagnose: the verdict follows the dataset's kind and state - a cold epoch over a slow
link is fetch-bound whatever the dataset (a packing FileDataset's fetches counted too), a local
or already fetched dataset never is - and the advice names only options of the classes in use.
Three real runs, each made to be bound by one thing - the link, the decoding, the step - each get
their own verdict (test_verdicts.py holds them)."""

import inspect
import os
import random
import re

import pytest
import torch.utils.data

import ferry
from ferry import _diagnosis
from ferry import transforms as T

CLASSES = {
    "StreamingDataset": ferry.StreamingDataset,
    "FileDataset": ferry.FileDataset,
    "DataLoader": ferry.DataLoader,
    "torch.utils.data.DataLoader": torch.utils.data.DataLoader,
    "Decode": T.Decode,
}


def _params(owner: str) -> set:
    return set(inspect.signature(CLASSES[owner]).parameters) - {"self"}


EVERY_OPTION = set().union(*(_params(owner) for owner in CLASSES))


def _check_names_only_real_options(report: dict, dataset: str, loader: str) -> None:
    """Every option the verdict names is a parameter of the class it names it for, and that class
    is one in use (the dataset's, the loader's; ferry.DataLoader's and Decode's as what to read
    it with); no other class's option appears in the text."""
    owners = {dataset, loader or "DataLoader"} | ({"Decode"} if loader == "DataLoader" else set())
    allowed = set().union(*(_params(owner) for owner in owners))
    # After the kind ("decode-bound" names no FileDataset option).
    words = set(re.findall(r"[A-Za-z_]+", report["verdict"].split(":", 1)[1]))
    assert not words & (EVERY_OPTION - allowed), report["verdict"]
    for owner, names in report["options"].items():
        assert owner in owners, (owner, report["verdict"])
        assert set(names) <= _params(owner), (owner, names)
    for names in report["options"].values():
        assert all(name in report["verdict"] for name in names)


def _put_files(s3rver, prefix: str, count: int, size: int) -> dict:
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3rver["endpoint"], region_name="us-east-1",
                      aws_access_key_id=s3rver["key"], aws_secret_access_key=s3rver["secret"])
    rng = random.Random(3)
    files = {}
    for i in range(count):
        files[f"c{i % 2}/f{i:03}.bin"] = bytes(rng.getrandbits(8) for _ in range(size))
    for path, data in files.items():
        s3.put_object(Bucket=s3rver["bucket"], Key=f"{prefix}/{path}", Body=data)
    return files


@pytest.mark.parametrize("pack", [True, False])
def test_a_cold_file_epoch_over_a_slow_link_is_fetch_bound(tmp_path, s3rver, slow_link, pack):
    # 24 files of 48 KB behind a link of 1 MB/s per connection: the loop waits on the fetches.
    prefix = f"diagnose/{tmp_path.name}"
    files = _put_files(s3rver, prefix, 24, 48_000)
    total = sum(len(d) for d in files.values())
    ds = ferry.FileDataset(f"s3://{s3rver['bucket']}/{prefix}", local=str(tmp_path / "cache"),
                           pack=pack)
    loader = ferry.DataLoader(ds, batch_size=4, num_threads=2)
    lines = []
    cold = ferry.diagnose(loader, lambda batch: None, steps=100, out=lines.append)
    assert cold["samples"] == len(files)
    assert cold["verdict"].startswith("fetch-bound"), lines[0]
    _check_names_only_real_options(cold, "FileDataset", "DataLoader")
    assert cold["bytes_fetched"] >= total, "what a packing FileDataset fetches is counted too"
    assert cold["files_fetched"] == len(files)
    assert loader.stats().bytes_fetched >= total
    assert "concurrency" in cold["options"]["FileDataset"]
    assert "FileDataset" in lines[0] and cold["verdict"] in lines[0]

    # Epoch 2 fetches nothing (the packs, or the cached files): whatever the wait, not fetching.
    warm = ferry.diagnose(loader, lambda batch: None, steps=100, out=lines.append)
    assert warm["samples"] == len(files)
    assert warm["bytes_fetched"] == 0 and warm["files_fetched"] == 0
    assert warm["packed_reads"] == (len(files) if pack else 0)
    assert not warm["verdict"].startswith("fetch-bound")
    _check_names_only_real_options(warm, "FileDataset", "DataLoader")


def test_a_cold_streaming_epoch_over_a_slow_link_is_fetch_bound(tmp_path, s3rver, slow_link,
                                                                monkeypatch):
    url = f"s3://{s3rver['bucket']}/diagnose/{tmp_path.name}"
    proxy = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3rver["endpoint"])  # written at full speed
    rng = random.Random(4)
    with ferry.MDSWriter(out=url, columns={"blob": "bytes", "i": "int"},
                         size_limit="256kb") as writer:
        for i in range(40):
            writer.write({"blob": bytes(rng.getrandbits(8) for _ in range(30_000)), "i": i})
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy)
    ds = ferry.StreamingDataset(batch_size=1, remote=url, local=str(tmp_path / "cache"))
    loader = ferry.DataLoader(ds, batch_size=4, num_threads=2)
    report = ferry.diagnose(loader, lambda batch: None, steps=100, out=lambda line: None)
    assert report["samples"] == 40
    assert report["bytes_fetched"] >= 40 * 30_000
    assert report["verdict"].startswith("fetch-bound"), report["verdict"]
    _check_names_only_real_options(report, "StreamingDataset", "DataLoader")
    assert "predownload" in report["options"]["StreamingDataset"]


def test_a_throttled_store_is_said_with_the_time_it_cost(tmp_path, s3rver, wan, monkeypatch):
    # 24 shards through a proxy that answers beyond 4 requests/s as S3 throttles (503 SlowDown,
    # Retry-After: 1): the waits are the throttle's, and the verdict says so.
    url = f"s3://{s3rver['bucket']}/diagnose/{tmp_path.name}"
    with ferry.MDSWriter(out=url, columns={"blob": "bytes", "i": "int"},
                         size_limit="64kb") as writer:
        for i in range(48):
            writer.write({"blob": bytes([i]) * 30_000, "i": i})
    stop = wan("--throttle-rps", "4", "--throttle-retry-after", "1")
    ds = ferry.StreamingDataset(batch_size=1, remote=url, local=str(tmp_path / "cache"),
                                download_concurrency=8)
    loader = ferry.DataLoader(ds, batch_size=4, num_threads=2)
    lines = []
    report = ferry.diagnose(loader, lambda batch: None, steps=100, out=lines.append)
    replies = stop()["faults"]["throttle"]
    assert report["samples"] == 48
    assert replies > 0, "the rate throttled"
    assert report["throttled"] == replies
    assert report["throttle_wait_s"] > 0
    assert f"{replies} throttle replies" in lines[0]
    assert report["verdict"].startswith("fetch-bound"), report["verdict"]
    assert f"the store sent {replies} throttle replies" in report["verdict"]
    _check_names_only_real_options(report, "StreamingDataset", "DataLoader")


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """One of each kind, local: (name of the class, dataset)."""
    root = tmp_path_factory.mktemp("diagnose")
    for i in range(8):
        (root / "files" / f"c{i % 2}").mkdir(parents=True, exist_ok=True)
        (root / "files" / f"c{i % 2}" / f"f{i}.bin").write_bytes(bytes([i]) * 100)
    with ferry.MDSWriter(out=str(root / "mds"), columns={"i": "int"}) as writer:
        for i in range(8):
            writer.write({"i": i})
    return [
        ("StreamingDataset", ferry.StreamingDataset(batch_size=1, local=str(root / "mds"))),
        ("StreamingDataset", ferry.StreamingDataset(batch_size=1, remote=str(root / "mds"),
                                                    local=str(root / "cache"))),
        ("FileDataset", ferry.FileDataset(str(root / "files"), local=False)),
        ("FileDataset", ferry.FileDataset(str(root / "files"), local=str(root / "c1"))),
        ("FileDataset", ferry.FileDataset(str(root / "files"), local=str(root / "c2"), pack=True)),
    ]


def _loaders(dataset):
    """(name of the loader's class, loader) for each way diagnose may be given the dataset."""
    return [("DataLoader", ferry.DataLoader(dataset, batch_size=2, num_threads=2)),
            ("torch.utils.data.DataLoader", torch.utils.data.DataLoader(dataset, num_workers=0)),
            ("torch.utils.data.DataLoader", torch.utils.data.DataLoader(dataset, num_workers=2)),
            ("", dataset)]


# (wait_s, compute_s, metrics counted): compute-bound; waiting while fetching; waiting with
# nothing fetched; waiting while fetching that the readers hardly waited for; packed reads.
MEASUREMENTS = [
    (0.5, 10.0, {}),
    (9.0, 1.0, {"/ferry/storage/s3/bytes_read": 10**8, "/ferry/stream/wait_ns": 30 * 10**9,
                "/ferry/files/wait_ns": 30 * 10**9, "/ferry/files/fetched": 100,
                "/ferry/files/concurrency": 8, "/ferry/stream/predownload": 64}),
    (9.0, 1.0, {"/ferry/cache/hits": 100, "/ferry/files/fetched": 100}),
    (9.0, 1.0, {"/ferry/storage/file/bytes_read": 10**6, "/ferry/stream/wait_ns": 10**6}),
    (9.0, 1.0, {"/ferry/files/packed_reads": 100}),
]


def test_every_verdict_names_only_options_of_the_classes_in_use(datasets):
    verdicts = set()
    for dataset_name, dataset in datasets:
        for loader_name, loader in _loaders(dataset):
            setup = _diagnosis._Setup(loader)
            assert setup.dataset == dataset_name
            for wait_s, compute_s, counted in MEASUREMENTS:
                measured = _diagnosis._Measured({}, counted, wait_s, compute_s)
                verdict, named = _diagnosis._advice(setup, measured)
                report = {"verdict": verdict, "options": named}
                _check_names_only_real_options(report, dataset_name, loader_name)
                verdicts.add(verdict.split(":")[0].split(" (")[0])
    assert verdicts == {"compute-bound", "fetch-bound", "decode-bound"}


def test_a_local_dataset_is_never_fetch_bound(datasets):
    for dataset_name, dataset in datasets:
        setup = _diagnosis._Setup(ferry.DataLoader(dataset, batch_size=2, num_threads=2))
        # Read in place or from a local MDS folder: no store is read, whatever the loop waited.
        if setup.remote:
            continue
        # (Bytes another dataset of the process fetched meanwhile are not this one's.)
        measured = _diagnosis._Measured({}, MEASUREMENTS[1][2], 9.0, 1.0)
        verdict, _ = _diagnosis._advice(setup, measured)
        assert verdict.startswith("decode-bound") and "(a local dataset" in verdict, verdict


def test_a_packing_file_dataset_is_advised_by_its_state(datasets):
    packing = next(ds for name, ds in datasets if name == "FileDataset" and ds._options["pack"])
    setup = _diagnosis._Setup(ferry.DataLoader(packing, batch_size=2, num_threads=2))
    fetching = _diagnosis._Measured({}, MEASUREMENTS[1][2], 9.0, 1.0)
    verdict, named = _diagnosis._advice(setup, fetching)
    assert "to be packed; later epochs read the packs" in verdict
    assert named == {"FileDataset": ["concurrency", "max_bytes_in_flight"]}
    assert "(auto chose 8)" in verdict
    # Reading the packs: nothing to fetch, and pack=True is not advised again.
    packed = _diagnosis._Measured({}, MEASUREMENTS[4][2], 9.0, 1.0)
    verdict, named = _diagnosis._advice(setup, packed)
    assert "the files come from the packs" in verdict and "FileDataset" not in named


def test_a_long_profile_keeps_a_bounded_series_of_the_whole_run():
    series = _diagnosis._Series("step", "wait")
    for step in range(5 * _diagnosis.MAX_POINTS):
        series.append(step=float(step), wait=1.0)
    steps, waits = series["step"], series["wait"]
    assert len(steps) == len(waits) < _diagnosis.MAX_POINTS
    # The whole run is still there, averaged: from the first steps to the last.
    assert steps[0] < 8 and steps[-1] > 4 * _diagnosis.MAX_POINTS
    assert steps == sorted(steps) and set(waits) == {1.0}
