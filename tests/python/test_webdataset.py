"""WebDataset tar shards through StreamingDataset: the fixture written by WebDataset's own
TarWriter, described by a shard list as wids writes it (or by none), streamed from a "remote"
folder through a cache; every sample is what Python's tarfile, grouped by WebDataset's rules, reads from the same
shards, and what WebDataset itself yielded (expected.json)."""

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import tarfile

import pytest
import torch

import ferry
from conftest import FIXTURES

TARWRITER = FIXTURES.parent / "webdataset" / "tarwriter"
BUILD = pathlib.Path(ferry.__file__).resolve().parents[2]  # <build>/python/ferry/__init__.py
FERRY_CLI = pathlib.Path(os.environ.get("FERRY_CLI", BUILD / "src" / "cli" / "ferry"))


def _ferry(*args, check=True):
    assert FERRY_CLI.is_file(), f"{FERRY_CLI} missing (make build)"
    return subprocess.run([str(FERRY_CLI), *map(str, args)], check=check, capture_output=True)


def _tarfile_samples(path: pathlib.Path, url=None):
    """The samples of one shard by WebDataset's rules, read with Python's tarfile; with `url`,
    each with its ``__url__`` as WebDataset gives it."""
    samples = []
    with tarfile.open(path) as tar:
        for member in tar:
            if not member.isreg():
                continue
            folder, _, base = member.name.rpartition("/")
            if "." not in base or (not folder and base.startswith("__")):
                continue
            stem, _, field = base.partition(".")
            key = f"{folder}/{stem}" if folder else stem
            if not samples or samples[-1]["__key__"] != key:
                samples.append({"__key__": key} if url is None else {"__key__": key, "__url__": url})
            samples[-1][field.lower()] = tar.extractfile(member).read()
    return samples


def _remote(fixture: pathlib.Path, remote: pathlib.Path) -> pathlib.Path:
    """A copy of the fixture's tars with the shard list wids would write for them."""
    remote.mkdir()
    shardlist = []
    for shard in sorted(fixture.glob("*.tar")):
        shutil.copyfile(shard, remote / shard.name)
        shardlist.append({"url": shard.name, "nsamples": len(_tarfile_samples(shard)),
                          "filesize": shard.stat().st_size})
    (remote / "index.json").write_text(json.dumps(
        {"__kind__": "wids-shard-index-v1", "wids_version": 1, "shardlist": shardlist}))
    return remote


@pytest.fixture()
def wds_remote(tmp_path):
    return _remote(TARWRITER, tmp_path / "remote")


@pytest.mark.parametrize("listed", [True, False], ids=["listed", "unlisted"])
@pytest.mark.parametrize("name", ["tarwriter", "gnutar", "edge", "gnutar_gz"])
def test_every_sample_is_what_tarfile_and_webdataset_read(name, listed, tmp_path):
    """With a shard list, and without one (the folder's tars are then listed and read once when
    the dataset opens)."""
    fixture = FIXTURES.parent / "webdataset" / name
    if name.endswith("_gz"):  # listed by `ferry index`, which sizes the tars inside
        remote = tmp_path / "remote"
        remote.mkdir()
        for shard in sorted(fixture.glob("*.tar.gz")):
            shutil.copyfile(shard, remote / shard.name)
        if listed:
            _ferry("index", remote)
        shards = sorted(remote.glob("*.tar.gz"))
    else:
        remote = _remote(fixture, tmp_path / "remote")
        if not listed:
            (remote / "index.json").unlink()
        shards = sorted(remote.glob("*.tar"))
    want = [s for shard in shards for s in _tarfile_samples(shard, f"{remote}/{shard.name}")]
    expected = json.loads((fixture / "expected.json").read_text())
    webdataset = [s for shard in expected["shards"] for s in shard["samples"]]
    assert len(want) == len(webdataset) > 0

    ds = ferry.StreamingDataset(remote=str(remote), local=str(tmp_path / "cache"),
                                shuffle=False, batch_size=4)
    assert ds.num_samples == len(want)
    got = list(ds)
    assert got == want
    for sample, reference in zip(got, webdataset):
        assert sample["__key__"] == reference["__key__"]
        assert {k: hashlib.sha256(v).hexdigest() for k, v in sample.items()
                if k not in ("__key__", "__url__")} \
            == {k: v["sha256"] for k, v in reference["fields"].items()}
    assert ds[len(want) // 2] == want[len(want) // 2]


def test_a_dataloader_of_two_workers_reads_every_sample_once(wds_remote, tmp_path):
    ds = ferry.StreamingDataset(remote=str(wds_remote), local=str(tmp_path / "cache"),
                                shuffle=True, batch_size=4)
    keys = []
    for batch in torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2):
        keys += batch["__key__"]
    assert sorted(keys) == sorted(s["__key__"] for s in (ds[i] for i in range(ds.num_samples)))
    assert len(keys) == len(set(keys)) == ds.num_samples


def test_a_shard_unlike_its_shard_list_is_a_data_loss_error_naming_it(wds_remote, tmp_path):
    index = json.loads((wds_remote / "index.json").read_text())
    index["shardlist"][0]["nsamples"] += 1
    (wds_remote / "index.json").write_text(json.dumps(index))
    ds = ferry.StreamingDataset(remote=str(wds_remote), local=str(tmp_path / "cache"),
                                shuffle=False)
    with pytest.raises(ferry.DataLossError, match="train-000000.tar"):
        ds[0]


def test_tars_ferry_writes_read_back_through_tarfile_as_written(tmp_path):
    """MDS -> WebDataset: Python's tarfile, grouping by WebDataset's rules, reads every sample
    back with its columns as fields - bytes as stored, numbers as decimal text."""
    rows = [{"__key__": f"s{i:03}", "data": bytes([i % 251]) * (i * 37 % 2000), "label": i % 7,
             "path": f"x/{i}.bin"} for i in range(120)]
    with ferry.MDSWriter(out=str(tmp_path / "mds"), size_limit=1 << 14,
                         columns={"__key__": "str", "data": "bytes", "label": "int",
                                  "path": "str"}) as writer:
        for row in rows:
            writer.write(row)
    _ferry("convert", tmp_path / "mds", tmp_path / "wds", "--to", "webdataset",
           "--size-limit", "64kb", "-q")
    shards = sorted((tmp_path / "wds").glob("*.tar"))
    assert len(shards) > 2
    got = [s for shard in shards for s in _tarfile_samples(shard)]
    assert got == [{"__key__": r["__key__"], "data": r["data"], "label": str(r["label"]).encode(),
                    "path": r["path"].encode()} for r in rows]
    # ... and ferry streams them, as listed in the index.json it wrote.
    ds = ferry.StreamingDataset(local=str(tmp_path / "wds"), shuffle=False, batch_size=8)
    assert list(ds) == [s for shard in shards
                        for s in _tarfile_samples(shard, f"{tmp_path / 'wds'}/{shard.name}")]


def test_a_webdataset_converts_into_mds_that_streams_the_same_samples(wds_remote, tmp_path):
    want = [s for shard in sorted(wds_remote.glob("*.tar")) for s in _tarfile_samples(shard)]
    _ferry("convert", wds_remote, tmp_path / "mds", "-q")
    ds = ferry.StreamingDataset(local=str(tmp_path / "mds"), shuffle=False, batch_size=8)
    assert sorted(ds.columns) == sorted(want[0].keys())
    assert list(ds) == want


def test_ferry_dataloader_reads_webdataset_fields_by_extension(tmp_path):
    """jpg fields decode and transform as jpeg columns do, cls fields batch as int64; the
    loader asks for the fields by name, since the samples name their own."""
    import io

    import numpy as np
    from PIL import Image

    from ferry import transforms as T

    rng = np.random.default_rng(3)
    images = []
    with ferry.MDSWriter(out=str(tmp_path / "mds"), columns={"jpg": "jpeg", "cls": "int"},
                         size_limit=1 << 15) as writer:
        for i in range(24):
            pixels = rng.integers(0, 255, (20 + i, 30, 3)).astype(np.uint8)
            writer.write({"jpg": Image.fromarray(pixels), "cls": i % 5})
    _ferry("convert", tmp_path / "mds", tmp_path / "wds", "--to", "webdataset", "-q")
    raw = [s for shard in sorted((tmp_path / "wds").glob("*.tar"))
           for s in _tarfile_samples(shard)]
    ds = ferry.StreamingDataset(local=str(tmp_path / "wds"), shuffle=False, batch_size=4)
    with pytest.raises(ferry.InvalidArgumentError, match="columns="):
        ferry.DataLoader(ds, batch_size=4)
    loader = ferry.DataLoader(ds, batch_size=4, num_threads=1, columns=["jpg", "cls"],
                              transform=[T.Decode(dct_scaling=False), T.CenterCrop((16, 16))])
    seen = 0
    for batch in loader:
        assert batch["cls"].dtype == torch.int64
        for k, sample_id in enumerate(batch["__ids__"].tolist()):
            want = raw[sample_id]
            assert batch["cls"][k].item() == int(want["cls"])
            image = Image.open(io.BytesIO(want["jpg"])).convert("RGB")
            top, left = int(round((image.height - 16) / 2.0)), int(round((image.width - 16) / 2.0))
            np.testing.assert_array_equal(batch["jpg"][k].numpy(),
                                          np.asarray(image.crop((left, top, left + 16, top + 16))))
            seen += 1
    assert seen == 24


@pytest.mark.parametrize("form", ["braces", "list"])
def test_a_shard_pattern_or_list_streams_the_tars_it_names(form, wds_remote, tmp_path):
    """WebDataset's names for shards: a brace pattern, or a list of tar URLs, of one folder -
    read in that order, the folder's own list (if any) aside."""
    shards = sorted(wds_remote.glob("*.tar"))
    if form == "braces":
        remote = f"{wds_remote}/train-{{000001,000000}}.tar"
    else:
        remote = [str(shards[1]), str(shards[0])]
    want = (_tarfile_samples(shards[1], str(shards[1]))
            + _tarfile_samples(shards[0], str(shards[0])))
    ds = ferry.StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=False,
                                batch_size=4)
    assert ds.num_samples == len(want)
    assert list(ds) == want
    assert not (tmp_path / "cache" / shards[2].name).exists()


def test_a_pattern_naming_a_missing_tar_is_an_error_naming_it(wds_remote, tmp_path):
    with pytest.raises(FileNotFoundError, match="train-000009.tar"):
        ferry.StreamingDataset(remote=f"{wds_remote}/train-{{000000,000009}}.tar",
                               local=str(tmp_path / "cache"), batch_size=4)
    with pytest.raises(ValueError, match="unbalanced braces"):
        ferry.StreamingDataset(remote=f"{wds_remote}/train-{{000000.tar",
                               local=str(tmp_path / "cache"), batch_size=4)


def test_a_folder_converts_into_tars_that_tarfile_groups_back(tmp_path):
    """`ferry convert FOLDER OUT --to webdataset`: a sample per key (files sharing a name up to
    its first dot), a field per extension, the class index as `cls`; what Python's tarfile,
    grouped by WebDataset's rules, and ferry's own streaming read back."""
    src = tmp_path / "images"
    files = ["cat/001.jpg", "cat/001.json", "cat/002.jpg", "dog/003.jpg", "dog/a.b.JPG"]
    for name in files:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(name.encode() * 3)
    _ferry("convert", src, tmp_path / "wds", "--to", "webdataset", "--encoding", "bytes", "-q")
    data = {name: name.encode() * 3 for name in files}
    want = [
        {"__key__": "cat/001", "cls": b"0", "jpg": data["cat/001.jpg"],
         "json": data["cat/001.json"]},
        {"__key__": "cat/002", "cls": b"0", "jpg": data["cat/002.jpg"]},
        {"__key__": "dog/003", "cls": b"1", "jpg": data["dog/003.jpg"]},
        {"__key__": "dog/a", "cls": b"1", "b.jpg": data["dog/a.b.JPG"]},
    ]
    shards = sorted((tmp_path / "wds").glob("*.tar"))
    assert [s for shard in shards for s in _tarfile_samples(shard)] == want
    assert json.loads((tmp_path / "wds" / "classes.json").read_text()) == ["cat", "dog"]
    ds = ferry.StreamingDataset(local=str(tmp_path / "wds"), shuffle=False, batch_size=2)
    assert [{k: v for k, v in s.items() if k != "__url__"} for s in ds] == want

    (src / "dog" / "README").write_bytes(b"no extension")
    with pytest.raises(subprocess.CalledProcessError) as failed:
        _ferry("convert", src, tmp_path / "wds2", "--to", "webdataset", "--encoding", "bytes")
    assert b"dog/README" in failed.value.stderr
    assert b"extension" in failed.value.stderr


def test_a_local_folder_of_tars_without_a_list_is_read_in_place(tmp_path):
    """No remote, no index.json: the tars are counted where they lie, and nothing is written
    beside them."""
    folder = tmp_path / "tars"
    shutil.copytree(TARWRITER, folder, ignore=shutil.ignore_patterns("expected.json"))
    before = sorted(p.name for p in folder.iterdir())
    shards = sorted(folder.glob("*.tar"))
    want = [s for shard in shards for s in _tarfile_samples(shard, f"{folder}/{shard.name}")]
    ds = ferry.StreamingDataset(local=str(folder), shuffle=False, batch_size=4)
    assert ds.num_samples == len(want)
    assert list(ds) == want
    assert ds[len(want) - 1] == want[-1]
    assert sorted(p.name for p in folder.iterdir()) == before


def test_inspect_verify_and_cat_read_unlisted_folders_and_patterns(tmp_path):
    folder = tmp_path / "tars"
    shutil.copytree(TARWRITER, folder, ignore=shutil.ignore_patterns("expected.json"))
    shards = sorted(folder.glob("*.tar"))
    counts = [len(_tarfile_samples(shard)) for shard in shards]

    listed = json.loads(_ferry("inspect", folder, "--json").stdout)
    assert (listed["shards"], listed["samples"]) == (3, sum(counts))
    pattern = f"{folder}/train-{{000002,000000}}.tar"
    selected = json.loads(_ferry("inspect", pattern, "--json").stdout)
    assert (selected["shards"], selected["samples"]) == (2, counts[2] + counts[0])

    printed = _ferry("cat", pattern).stdout.decode().splitlines()
    keys = [json.loads(line)["__key__"] for line in printed]
    assert keys == [s["__key__"] for i in (2, 0) for s in _tarfile_samples(shards[i])]

    assert b"ok:" in _ferry("verify", folder).stdout
    assert b"ok:" in _ferry("verify", pattern).stdout
    assert not (folder / "index.json").exists()  # read, not written
    # A tar cut short fails the check, named.
    data = shards[1].read_bytes()
    shards[1].write_bytes(data[: len(data) // 2 + 100])
    failed = _ferry("verify", folder, check=False)
    assert failed.returncode != 0
    assert b"train-000001.tar" in failed.stderr + failed.stdout
    assert b"ok:" in _ferry("verify", pattern).stdout  # names only the others
