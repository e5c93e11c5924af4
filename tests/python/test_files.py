"""ferry.FileDataset: folders of small files, local and in an S3 server (s3rver), under torch's
DataLoader workers and simulated ranks."""

import io
import pathlib
import random

import pytest
import torch.utils.data

import ferry


def _make_root(root: pathlib.Path, classes: int = 3, per_class: int = 12) -> dict:
    rng = random.Random(5)
    files = {}
    for c in range(classes):
        for i in range(per_class):
            path = f"c{c}/f{i:03}.bin"
            data = bytes(rng.getrandbits(8) for _ in range(rng.randint(100, 900)))
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
            files[path] = data
    return files


def _read(ds, workers: int):
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    return [(s["path"], s["data"], s["label"]) for s in loader]


def test_exactly_once_across_workers_and_ranks_and_the_same_order_for_the_same_seed(
        tmp_path, monkeypatch):
    files = _make_root(tmp_path / "root")
    seen = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        ds = ferry.FileDataset(str(tmp_path / "root"), local=str(tmp_path / "cache"),
                               shuffle=True, shuffle_seed=3)
        assert len(ds) == 18
        got = _read(ds, workers=2)
        assert len(got) == 18
        for path, data, label in got:
            assert data == files[path]
            assert label == int(path[1])
        seen += [p for p, _, _ in got]
    assert sorted(seen) == sorted(files), "every file exactly once across ranks and workers"
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    a = ferry.FileDataset(str(tmp_path / "root"), local=str(tmp_path / "cache"), shuffle=True,
                          shuffle_seed=3)
    b = ferry.FileDataset(str(tmp_path / "root"), local=str(tmp_path / "cache"), shuffle=True,
                          shuffle_seed=3)
    first = [s["path"] for s in a]
    assert first == [s["path"] for s in b]
    assert first != [s["path"] for s in a], "the next epoch has another order"
    a.set_epoch(0)
    assert [s["path"] for s in a] == first
    assert [a.files[i][0] for i in a.order(0)] == first


def test_in_place_random_access_labels_and_images(tmp_path):
    from PIL import Image

    root = tmp_path / "images"
    for name, color in (("cat", (255, 0, 0)), ("dog", (0, 0, 255))):
        (root / name).mkdir(parents=True)
        buf = io.BytesIO()
        Image.new("RGB", (16, 8), color).save(buf, format="PNG")
        (root / name / "a.png").write_bytes(buf.getvalue())
    (root / "dog" / "notes.txt").write_text("not an image")
    ds = ferry.FileDataset(str(root), local=False, extensions=["png"], decode="pil")
    assert ds.classes == ["cat", "dog"]
    assert len(ds) == 2 and ds.num_files == 2
    sample = ds[1]
    assert sample["path"] == "dog/a.png" and sample["label"] == 1
    assert sample["data"].size == (16, 8) and sample["data"].getpixel((0, 0)) == (0, 0, 255)
    assert ds[-2]["path"] == "cat/a.png"
    with pytest.raises(IndexError):
        ds[2]
    assert not (root / ".ferry").exists(), "reading in place writes nothing into the root"


def test_clear_errors(tmp_path):
    with pytest.raises(ferry.NotFoundError):
        ferry.FileDataset(str(tmp_path / "missing"), local=False)
    (tmp_path / "r").mkdir()
    with pytest.raises(ferry.InvalidArgumentError, match="labels"):
        ferry.FileDataset(str(tmp_path / "r"), labels="parent")
    with pytest.raises(ferry.InvalidArgumentError, match="on_missing"):
        ferry.FileDataset(str(tmp_path / "r"), on_missing="ignore")
    with pytest.raises(ferry.InvalidArgumentError, match="need `local`"):
        ferry.FileDataset(str(tmp_path / "r"), local=False, pack=True)
    # A list is not a path: it used to become the folder "['...']".
    with pytest.raises(ferry.InvalidArgumentError, match="root must be a URL or a path"):
        ferry.FileDataset([str(tmp_path / "r")], local=False)
    with pytest.raises(ferry.InvalidArgumentError, match="local must be a URL or a path"):
        ferry.FileDataset(str(tmp_path / "r"), local=[str(tmp_path / "c")])


@pytest.fixture
def s3_root(tmp_path, s3rver):
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3rver["endpoint"], region_name="us-east-1",
                      aws_access_key_id=s3rver["key"], aws_secret_access_key=s3rver["secret"])
    bucket = s3rver["bucket"]
    prefix = f"files/{tmp_path.name}"
    files = _make_root(tmp_path / "src", classes=4, per_class=15)
    for path, data in files.items():  # an independent client puts what ferry must read
        s3.put_object(Bucket=bucket, Key=f"{prefix}/{path}", Body=data)
    return s3, bucket, prefix, f"s3://{bucket}/{prefix}", files


def _s3_gets():
    return sum(v for k, v in ferry.metrics().items()
               if k.startswith("/ferry/storage/s3") and k.endswith("/requests"))


@pytest.mark.parametrize("pack", [False, True])
def test_a_remote_folder_epoch_two_makes_no_request(tmp_path, s3_root, pack):
    _, _, _, url, files = s3_root
    before_open = _s3_gets()
    ds = ferry.FileDataset(url, local=str(tmp_path / "cache"), shuffle=True, pack=pack)
    assert _s3_gets() > before_open, "the counter sees this process's requests (the listing)"
    first = _read(ds, workers=2)
    assert sorted(p for p, _, _ in first) == sorted(files)
    assert all(data == files[p] for p, data, _ in first)
    # Epoch 2 in this process, where the request counter is.
    before = _s3_gets()
    second = _read(ds, workers=0)
    assert sorted(p for p, _, _ in second) == sorted(files)
    assert all(data == files[p] for p, data, _ in second)
    assert _s3_gets() == before, "epoch 2 is served locally"
    assert [p for p, _, _ in first] != [p for p, _, _ in second]
    cache = tmp_path / "cache"
    if pack:
        assert len(list((cache / ".ferry" / "packs").iterdir())) == 2, "one pack per worker"
        assert not (cache / "c0").exists(), "packing keeps no per-file copies"
        assert ferry.metrics()["/ferry/files/packed_reads"] >= len(files)
    else:
        assert all((cache / p).read_bytes() == d for p, d in files.items())
    # Epoch 3 under workers again still reads everything exactly once.
    third = _read(ds, workers=3)
    assert sorted(p for p, _, _ in third) == sorted(files)


def test_a_changed_remote_file_is_fetched_again_and_a_vanished_one_skipped(tmp_path, s3_root):
    s3, bucket, prefix, url, files = s3_root
    local = str(tmp_path / "cache")
    ds = ferry.FileDataset(url, local=local)
    assert ds.listed
    assert [s["data"] for s in ds] == [files[p] for p in sorted(files)]
    changed, gone = sorted(files)[5], sorted(files)[9]
    new = bytes(len(files[changed]))  # same size: only the etag tells
    s3.put_object(Bucket=bucket, Key=f"{prefix}/{changed}", Body=new)
    s3.delete_object(Bucket=bucket, Key=f"{prefix}/{gone}")
    reused = ferry.FileDataset(url, local=local)
    assert not reused.listed, "the stored listing is reused"
    assert reused[5]["data"] == files[changed], "served from the cache until listed again"
    fresh = ferry.FileDataset(url, local=local, refresh=True, on_missing="skip")
    assert fresh.listed and fresh.num_files == len(files) - 1
    assert fresh[5]["data"] == new
    # A file that vanishes after the listing: an error naming it, or skipped and counted.
    stale = ferry.FileDataset(url, local=str(tmp_path / "other"))
    s3.delete_object(Bucket=bucket, Key=f"{prefix}/{sorted(files)[0]}")
    with pytest.raises(ferry.NotFoundError, match=sorted(files)[0]):
        list(stale)
    skipping = ferry.FileDataset(url, local=str(tmp_path / "other"), on_missing="skip")
    missing = ferry.metrics().get("/ferry/files/missing", 0)
    # `gone` was never listed here; the first file is listed and missing.
    assert len(list(skipping)) == len(files) - 2
    assert ferry.metrics()["/ferry/files/missing"] == missing + 1
    leftovers = [p for p in pathlib.Path(tmp_path / "other").rglob("*") if "ferry-tmp" in p.name]
    assert not leftovers, "no partial file is left behind"


def _jpeg_root(root: pathlib.Path, classes: int = 2, per_class: int = 9) -> None:
    from PIL import Image

    for c in range(classes):
        (root / f"k{c}").mkdir(parents=True)
        for i in range(per_class):
            buf = io.BytesIO()
            Image.new("RGB", (24 + i, 20), (40 * c, 7 * i, 90)).save(buf, format="JPEG")
            (root / f"k{c}" / f"{i}.jpg").write_bytes(buf.getvalue())


def test_ferry_dataloader_decodes_a_folder_of_jpegs(tmp_path):
    from ferry import transforms as T

    _jpeg_root(tmp_path / "root")
    ds = ferry.FileDataset(str(tmp_path / "root"), local=str(tmp_path / "cache"), shuffle=True)
    loader = ferry.DataLoader(ds, batch_size=4, num_threads=2, transform=[T.CenterCrop(16)])
    assert len(loader) == 6  # 9 files per thread: 3 batches each (4, 4, 1)
    labels = {}
    for batch in loader:
        assert batch["data"].shape[1:] == (16, 16, 3) and batch["data"].dtype == torch.uint8
        for path, label in zip(batch["path"], batch["label"].tolist()):
            labels[path] = label
    assert sorted(labels) == sorted(p for p, _, _ in ds.files)
    assert all(label == int(path[1]) for path, label in labels.items())


def test_ferry_dataloader_resumes_a_file_epoch_exactly(tmp_path):
    _jpeg_root(tmp_path / "root", classes=3, per_class=10)

    def make():
        ds = ferry.FileDataset(str(tmp_path / "root"), local=str(tmp_path / "cache"),
                               shuffle=True, shuffle_seed=11)
        return ferry.DataLoader(ds, batch_size=3, num_threads=2, columns=["path"])

    full = [p for b in make() for p in b["path"]]
    assert sorted(full) == sorted(set(full)) and len(full) == 30
    first = make()
    it = iter(first)
    head = [p for _ in range(4) for p in next(it)["path"]]
    state = first.state_dict()
    first.close()
    resumed = make()
    resumed.load_state_dict(state)
    rest = [p for b in resumed for p in b["path"]]
    assert head + rest == full, "the interrupted epoch continues where it stopped"


def test_ctrl_c_interrupts_a_wait_for_a_file(tmp_path, s3rver, slow_link, seconds_to_interrupt):
    # Four files of 3 MB at 1 MB/s: the first arrives after about three seconds. Ctrl+C must
    # not wait for it.
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3rver["endpoint"], region_name="us-east-1",
                      aws_access_key_id=s3rver["key"], aws_secret_access_key=s3rver["secret"])
    prefix = f"files/{tmp_path.name}"
    for i in range(4):
        s3.put_object(Bucket=s3rver["bucket"], Key=f"{prefix}/c0/f{i}.bin", Body=bytes([i]) * (3 << 20))
    ds = ferry.FileDataset(f"s3://{s3rver['bucket']}/{prefix}", local=str(tmp_path / "cache"))
    read = []
    interrupted_after = seconds_to_interrupt(lambda: read.extend(s["path"] for s in ds), 0.5)
    assert 0.5 <= interrupted_after < 2.0, interrupted_after
    assert not read, "the interrupt came while the first file was still on its way"


def test_a_stray_file_is_an_error_naming_it_not_a_silent_change_of_type(tmp_path):
    from ferry import transforms as T

    _jpeg_root(tmp_path / "root")
    (tmp_path / "root" / "k1" / "notes.txt").write_text("not an image")
    with pytest.raises(ferry.InvalidArgumentError,
                       match=r"1 of 19 files is not named like the jpeg files.*k1/notes.txt.*"
                             r"skip_other=True.*encoding=\"bytes\""):
        ferry.FileDataset(str(tmp_path / "root"), local=False)
    ds = ferry.FileDataset(str(tmp_path / "root"), local=False, skip_other=True)
    assert ds.data_encoding == "jpeg" and ds.skipped_other == 1 and ds.num_files == 18
    assert "k1/notes.txt" not in [p for p, _, _ in ds.files]
    # The loader decodes the jpeg column: the transform applies to every file left.
    loader = ferry.DataLoader(ds, batch_size=6, num_threads=1, transform=[T.CenterCrop(16)])
    assert sum(len(b["data"]) for b in loader) == 18
    as_bytes = ferry.FileDataset(str(tmp_path / "root"), local=False, encoding="bytes")
    assert as_bytes.data_encoding == "bytes" and as_bytes.num_files == 19
    with pytest.raises(ferry.InvalidArgumentError, match="encoding"):
        ferry.FileDataset(str(tmp_path / "root"), local=False, encoding="gif")


def test_an_mds_prefix_is_refused_at_open(tmp_path, s3rver):
    url = f"s3://{s3rver['bucket']}/mds/{tmp_path.name}"
    with ferry.MDSWriter(out=url, columns={"x": "int"}, size_limit=64) as writer:
        for i in range(20):
            writer.write({"x": i})
    with pytest.raises(ferry.InvalidArgumentError,
                       match=r"holds an MDS dataset \(index.json\): read it with StreamingDataset,"
                             r" or point FileDataset at the raw files"):
        ferry.FileDataset(url, local=str(tmp_path / "cache"))
