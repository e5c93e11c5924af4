"""What a Mosaic Streaming user sees, with only the import changed (issue 20): exact sample counts
for every worker count, batch size and dataset size; any num_canonical_nodes Mosaic accepts;
subclasses that override __getitem__ / get_item; index types; epoch_size abbreviations; the
errors and warnings Mosaic gives."""

import numpy as np
import pytest
import torch
import torch.utils.data

import ferry

SIZES = (117, 1003, 9867)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """{size: folder} of datasets whose sample i holds id i, in shards of uneven sizes."""
    out = {}
    for n in SIZES:
        folder = tmp_path_factory.mktemp("sizes") / str(n)
        with ferry.MDSWriter(out=str(folder), columns={"id": "int"}, size_limit=max(64, n)) as w:
            for i in range(n):
                w.write({"id": i})
        out[n] = folder
    return out


def _epoch(loader):
    ids, batches = [], 0
    for batch in loader:
        batches += 1
        ids.extend(int(i) for i in batch["id"])
    return ids, batches


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("workers", [0, 1, 2, 8])
def test_one_rank_yields_exactly_len_distinct_samples_and_len_batches(datasets, n, workers):
    for batch in (1, 2, 7, 64, 128):
        ds = ferry.StreamingDataset(local=str(datasets[n]), batch_size=batch, shuffle=True,
                                    num_canonical_nodes=8)
        assert len(ds) == n
        for drop_last in (False, True):
            loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers,
                                                 drop_last=drop_last)
            ids, batches = _epoch(loader)
            assert batches == len(loader), (batch, drop_last)
            if drop_last:
                assert len(ids) == n // batch * batch
                assert len(set(ids)) == len(ids)
            else:
                assert sorted(ids) == list(range(n)), (batch, workers)


@pytest.mark.parametrize("epoch_size", [50, 2000])
def test_epoch_size_smaller_and_larger_than_the_dataset(datasets, epoch_size):
    ds = ferry.StreamingDataset(local=str(datasets[117]), batch_size=7, epoch_size=epoch_size,
                                shuffle=True)
    assert len(ds) == epoch_size
    for workers in (0, 2, 6):
        ids, _ = _epoch(torch.utils.data.DataLoader(ds, batch_size=7, num_workers=workers))
        assert len(ids) == epoch_size
        counts = np.bincount(ids, minlength=117)
        assert counts.max() - counts.min() <= 1  # balanced: whole copies, then a subset


def test_two_ranks_repeat_at_most_one_sample(datasets, monkeypatch):
    seen = []
    for rank in (0, 1):
        monkeypatch.setenv("WORLD_SIZE", "2")
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
        monkeypatch.setenv("LOCAL_RANK", str(rank))
        ds = ferry.StreamingDataset(local=str(datasets[1003]), batch_size=4, shuffle=True)
        assert len(ds) == 502
        ids, _ = _epoch(torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2))
        assert len(ids) == 502 and len(set(ids)) == 502
        seen.append(ids)
    together = seen[0] + seen[1]
    assert set(together) == set(range(1003))
    assert len(together) - len(set(together)) == 1


def test_fixed_sampling_keeps_the_same_samples_every_epoch(datasets):
    ds = ferry.StreamingDataset(local=str(datasets[117]), batch_size=4, epoch_size=60,
                                sampling_method="fixed", shuffle=True)
    first = sorted(_epoch(torch.utils.data.DataLoader(ds, batch_size=4))[0])
    second = sorted(_epoch(torch.utils.data.DataLoader(ds, batch_size=4))[0])
    assert len(first) == 60 and first == second


@pytest.mark.parametrize("canonical, batch, workers", [(8, 6, 2), (64, 6, 2), (7, 5, 3),
                                                       (1000, 4, 1)])
def test_canonical_node_counts_mosaic_accepts_work(datasets, canonical, batch, workers):
    ds = ferry.StreamingDataset(local=str(datasets[1003]), batch_size=batch, shuffle=True,
                                num_canonical_nodes=canonical)
    ids, _ = _epoch(torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers))
    assert sorted(ids) == list(range(1003))


def test_canonical_nodes_that_do_not_divide_the_nodes_are_refused(datasets, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # 2 nodes
    monkeypatch.setenv("RANK", "0")
    ds = ferry.StreamingDataset(local=str(datasets[117]), batch_size=2, num_canonical_nodes=3)
    with pytest.raises(ValueError, match="Either canonical or physical nodes must be evenly"):
        next(iter(ds))


def test_iterating_without_batch_size_asks_for_it(datasets):
    ds = ferry.StreamingDataset(local=str(datasets[117]))
    assert len(ds) == 117 and ds[3]["id"] == 3  # fine without it
    with pytest.raises(ValueError, match="Please pass `batch_size`"):
        next(iter(ds))


def test_predownload_below_batch_size_warns(datasets):
    with pytest.warns(UserWarning, match="predownload < batch_size"):
        ferry.StreamingDataset(local=str(datasets[117]), batch_size=8, predownload=4)


@pytest.mark.parametrize("value, samples", [("100", 100), (250, 250), ("1k", 1000),
                                            ("0.2k", 200)])
def test_epoch_size_is_a_count_with_mosaic_abbreviations(datasets, value, samples):
    ds = ferry.StreamingDataset(local=str(datasets[117]), batch_size=1, epoch_size=value)
    assert len(ds) == samples


def test_epoch_size_bad_values_are_value_errors(datasets):
    with pytest.raises(ValueError):
        ferry.StreamingDataset(local=str(datasets[117]), epoch_size="2kb")
    with pytest.raises(ValueError, match="negative"):
        ferry.StreamingDataset(local=str(datasets[117]), epoch_size=-5)


def test_indexes_of_every_kind(datasets):
    ds = ferry.StreamingDataset(local=str(datasets[117]))
    assert ds[np.int64(5)]["id"] == 5
    assert ds[-1]["id"] == 116
    assert [s["id"] for s in ds[[3, 1, 4]]] == [3, 1, 4]
    assert [s["id"] for s in ds[np.array([9, 2])]] == [9, 2]
    assert [s["id"] for s in ds[110:113]] == [110, 111, 112]
    with pytest.raises(IndexError):
        ds[117]
    with pytest.raises(ValueError):
        ds["3"]


class _Pairs(ferry.StreamingDataset):
    """Mosaic's documented pattern: override __getitem__ to return (tensor, label)."""

    def __getitem__(self, idx):
        sample = super().__getitem__(idx)
        return torch.tensor([float(sample["id"])]), int(sample["id"]) % 3


class _Items(ferry.StreamingDataset):
    """Mosaic's own vision datasets override get_item instead."""

    def get_item(self, idx, retry=7):
        sample = super().get_item(idx)
        return {"x": torch.tensor(sample["id"]) * 2}


def test_a_subclass_getitem_is_what_the_dataloader_trains_on(datasets):
    ds = _Pairs(local=str(datasets[1003]), batch_size=8, shuffle=True)
    x, y = ds[10]
    assert x.item() == 10.0 and y == 1
    seen = []
    model = torch.nn.Linear(1, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for xb, yb in torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2):
        assert xb.shape[1:] == (1,) and yb.dtype == torch.int64
        assert torch.equal(yb, xb[:, 0].long() % 3)
        loss = torch.nn.functional.cross_entropy(model(xb / 1003), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seen.extend(int(v) for v in xb[:, 0])
    assert sorted(seen) == list(range(1003))


def test_a_subclass_get_item_is_used_by_indexing_and_iteration(datasets):
    ds = _Items(local=str(datasets[117]), batch_size=4)
    assert ds[7]["x"].item() == 14
    got = sorted(int(b) for batch in torch.utils.data.DataLoader(ds, batch_size=4)
                 for b in batch["x"])
    assert got == [2 * i for i in range(117)]


def _batches(ds, workers, limit=None):
    loader = ferry.StreamingDataLoader(ds, batch_size=4, num_workers=workers)
    out = []
    for batch in loader:
        out.append([int(i) for i in batch["id"]])
        if limit is not None and len(out) == limit:
            break
    return out, loader


def test_resuming_with_another_worker_count_continues_the_same_batches(datasets):
    def dataset():
        return ferry.StreamingDataset(local=str(datasets[117]), batch_size=4, shuffle=True)

    full, _ = _batches(dataset(), 2)
    assert sorted(i for b in full for i in b) == list(range(117))
    head, loader = _batches(dataset(), 2, limit=9)
    state = loader.state_dict()
    assert state["sample_in_epoch"] == 36
    for workers in (0, 3):
        resumed = dataset()
        resumed.load_state_dict(state)
        rest, _ = _batches(resumed, workers)
        assert head + rest == full, workers


def test_an_empty_or_corrupt_index_is_a_json_decode_error(tmp_path):
    import json

    for content in ("", "{not json"):
        (tmp_path / "index.json").write_text(content)
        with pytest.raises(json.JSONDecodeError, match="Index file at .* is empty or corrupted"):
            ferry.StreamingDataset(local=str(tmp_path), batch_size=1)


def test_an_index_without_shards_is_a_runtime_error(tmp_path):
    (tmp_path / "index.json").write_text('{"shards": [], "version": 2}')
    with pytest.raises(RuntimeError, match="Stream contains no samples: .*index.json"):
        ferry.StreamingDataset(local=str(tmp_path), batch_size=1)


def test_no_remote_and_no_local_index_is_a_runtime_error(tmp_path):
    with pytest.raises(RuntimeError, match="No `remote` provided, but local file .* does not"):
        ferry.StreamingDataset(local=str(tmp_path), batch_size=1)


@pytest.mark.parametrize("method", ["random", "fixedd", ""])
def test_an_unknown_sampling_method_names_the_valid_ones(datasets, method):
    with pytest.raises(ValueError, match=f"Invalid sampling method: {method}. Must be one of "
                                         f"`balanced` or `fixed`"):
        ferry.StreamingDataset(local=str(datasets[117]), sampling_method=method)


def test_py1e_refuses_canonical_nodes_without_samples_and_warns_of_narrow_blocks(datasets):
    tiny = ferry.StreamingDataset(local=str(datasets[117]), batch_size=1, epoch_size=1,
                                  shuffle=True, num_canonical_nodes=2)
    with pytest.raises(ValueError, match="samples assigned to a canonical node is 0"):
        list(tiny)
    narrow = ferry.StreamingDataset(local=str(datasets[1003]), batch_size=1, shuffle=True,
                                    shuffle_block_size=2)
    with pytest.warns(UserWarning, match="Shuffle block size was smaller than shard size"):
        assert len(list(narrow)) == 1003
    import warnings

    wide = ferry.StreamingDataset(local=str(datasets[1003]), batch_size=1, shuffle=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(wide)) == 1003


def test_replication_gives_consecutive_ranks_the_same_samples(datasets, monkeypatch):
    seen = []
    for rank in range(4):
        for name, value in (("WORLD_SIZE", 4), ("RANK", rank), ("LOCAL_WORLD_SIZE", 4),
                            ("LOCAL_RANK", rank)):
            monkeypatch.setenv(name, str(value))
        ds = ferry.StreamingDataset(local=str(datasets[117]), batch_size=4, shuffle=True,
                                    replication=2)
        assert len(ds) == 59  # two groups of ranks
        seen.append(_epoch(torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2))[0])
    assert seen[0] == seen[1] and seen[2] == seen[3] and seen[0] != seen[2]
    assert set(seen[0]) | set(seen[2]) == set(range(117))
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    with pytest.raises(ValueError, match="divisible by your replication factor"):
        len(ferry.StreamingDataset(local=str(datasets[117]), batch_size=4, replication=2))
    with pytest.raises(ValueError, match="Replication factor must be positive"):
        ferry.StreamingDataset(local=str(datasets[117]), replication=0)


def test_a_state_at_the_end_of_a_drop_last_epoch_resumes_into_the_next(datasets):
    ds = ferry.StreamingDataset(local=str(datasets[117]), batch_size=4, drop_last=True)
    assert len(ds) == 116
    ds.load_state_dict({"epoch": 0, "sample_in_epoch": 116})
    assert ds.next_epoch == 1


def test_an_index_error_survives_pickling():
    import pickle

    error = ferry.errors.IndexDecodeError("/x/index.json: index is not valid JSON")
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and str(again).count("Index file at") == 1


def test_a_remote_without_index_is_file_not_found_in_the_stores_words(tmp_path):
    (tmp_path / "remote").mkdir()
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        ferry.StreamingDataset(remote=str(tmp_path / "remote"), local=str(tmp_path / "local"),
                               batch_size=1)
