"""A DataLoader worker hands sample bytes read from cache files to the main process as their
place in the file (python/ferry/_handoff.py): the main process gets plain `bytes`, equal to what
was written, whether the file is still there, was published again, or the hand-off is off."""

import gc
import os
import pickle
import shutil
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
import torch.utils.data

import ferry
from conftest import upload_dataset
from ferry import _handoff
from ferry.errors import DataLossError

SAMPLES = 300


def _write(folder):
    """{label: data} of a dataset of SAMPLES samples in shards of about 64 KB."""
    truth = {i: os.urandom(1000 + 7 * i) for i in range(SAMPLES)}
    with ferry.MDSWriter(out=str(folder), columns={"data": "bytes", "label": "int"},
                         size_limit=1 << 16) as w:
        for i, data in truth.items():
            w.write({"data": data, "label": i})
    return truth


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    folder = tmp_path_factory.mktemp("handoff")
    return folder, _write(folder)


def _collate(samples):
    return ([s["data"] for s in samples], [int(s["label"]) for s in samples],
            [type(s["data"]).__name__ for s in samples])


def _read_through_workers(ds, workers=2):
    """({label: data} as the main process received them, the types the workers saw)."""
    got, seen = {}, set()
    loader = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=workers,
                                         collate_fn=_collate)
    for data, labels, types in loader:
        seen.update(types)
        for b, label in zip(data, labels):
            assert type(b) is bytes, type(b)
            assert label not in got
            got[label] = b
    return got, seen


def test_workers_hand_samples_over_by_file_and_the_main_process_gets_their_bytes(local):
    folder, truth = local
    got, seen = _read_through_workers(ferry.StreamingDataset(local=str(folder), batch_size=8,
                                                             shuffle=True))
    assert seen == {"SampleBytes"}
    assert got == truth


def test_samples_cached_from_a_remote_are_handed_over_from_the_cache_folder(tmp_path, s3rver):
    data = tmp_path / "data"
    truth = _write(data)
    url = upload_dataset(data, f"s3://{s3rver['bucket']}/python/handoff/{tmp_path.name}")
    ds = ferry.StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=8,
                                shuffle=True)
    for _ in range(2):  # epoch 1 downloads (some samples by range, in memory), epoch 2 cached
        got, seen = _read_through_workers(ds)
        assert got == truth
        assert "SampleBytes" in seen


def test_without_the_hand_off_workers_send_plain_bytes(local, monkeypatch):
    monkeypatch.setenv("FERRY_SAMPLE_HANDOFF", "copy")
    folder, truth = local
    got, seen = _read_through_workers(ferry.StreamingDataset(local=str(folder), batch_size=8))
    assert seen == {"bytes"}
    assert got == truth


def _handed_off(ds):
    """(a sample's field as a worker holds it, its label) from iterating as a worker would."""
    it = ds._native().iterate((1, 1, 1), (0, 0, 0), 0, 0, 0,
                              (_handoff.SampleBytes, ds._handoff_token))
    _, _, values = next(it)
    it.close()
    return values[0], values[1]


def test_the_pickle_names_the_place_and_plain_pickle_keeps_the_bytes(local):
    folder, truth = local
    field, label = _handed_off(ferry.StreamingDataset(local=str(folder), batch_size=8))
    assert isinstance(field, _handoff.SampleBytes) and field == truth[label]
    sent = ForkingPickler.dumps(field)
    assert len(sent) < 300 < len(field)  # the place, not the bytes
    back = pickle.loads(sent)
    assert type(back) is bytes and back == truth[label]
    kept = pickle.loads(pickle.dumps(field))  # pickle and torch.save store the bytes
    assert kept == truth[label]


def test_a_file_published_again_is_read_through_the_dataset(tmp_path):
    truth = _write(tmp_path / "data")
    ds = ferry.StreamingDataset(local=str(tmp_path / "data"), batch_size=8)
    field, label = _handed_off(ds)
    sent = ForkingPickler.dumps(field)
    path = os.fsdecode(field._at[0])
    shutil.copy(path, path + ".new")  # another inode under the same name
    os.replace(path + ".new", path)
    file, inode, offset = field._at[:3]
    assert _handoff._files.read(file, inode, offset, len(field)) is None  # not the file it was
    assert pickle.loads(sent) == truth[label]


def test_a_file_gone_without_its_dataset_is_a_clear_error(tmp_path):
    _write(tmp_path / "data")
    ds = ferry.StreamingDataset(local=str(tmp_path / "data"), batch_size=8)
    field, _ = _handed_off(ds)
    sent = ForkingPickler.dumps(field)
    path = os.fsdecode(field._at[0])
    os.remove(path)
    del ds
    gc.collect()
    with pytest.raises(DataLossError, match=os.path.basename(path)):
        pickle.loads(sent)


def test_a_shard_with_columns_of_its_own_is_read_again_by_column_order(tmp_path):
    # Merged parts with other columns: their samples come as dicts, in their own column order.
    root = tmp_path / "root"
    with ferry.MDSWriter(out=str(root / "a"), columns={"data": "bytes", "label": "int"}) as w:
        w.write({"data": b"first part", "label": 0})
    with ferry.MDSWriter(out=str(root / "b"), columns={"extra": "str", "data": "bytes"}) as w:
        w.write({"extra": "x", "data": b"second part, its own columns"})
    ferry.util.merge_index(str(root))
    ds = ferry.StreamingDataset(local=str(root), batch_size=1)
    it = ds._native().iterate((1, 1, 1), (0, 0, 0), 0, 0, 0,
                              (_handoff.SampleBytes, ds._handoff_token))
    values = [v for _, _, v in it]
    fields = [v["data"] for v in values if isinstance(v, dict)]
    assert len(fields) == 1 and isinstance(fields[0], _handoff.SampleBytes)
    sent = ForkingPickler.dumps(fields[0])
    path = os.fsdecode(fields[0]._at[0])
    shutil.copy(path, path + ".new")
    os.replace(path + ".new", path)
    assert pickle.loads(sent) == b"second part, its own columns"


def test_the_main_process_lets_go_of_removed_files(tmp_path):
    # An fd kept open would hold an evicted shard's blocks on disk past the cache_limit.
    truth = _write(tmp_path / "data")
    ds = ferry.StreamingDataset(local=str(tmp_path / "data"), batch_size=8)
    field, label = _handed_off(ds)
    file, inode, offset = field._at[:3]
    assert _handoff._files.read(file, inode, offset, len(field)) == truth[label]
    assert (file, inode) in _handoff._files._fds
    os.remove(os.fsdecode(file))
    other = tmp_path / "other"
    other.write_bytes(b"x" * 64)
    other_key = os.fsencode(other), os.stat(other).st_ino
    for _ in range(_handoff._OpenFiles._SWEEP_EVERY):
        assert _handoff._files.read(*other_key, 0, 8) == b"x" * 8
    assert (file, inode) not in _handoff._files._fds
    assert other_key in _handoff._files._fds
