"""batching_method with several streams (Mosaic's per_stream, stratified, device_per_stream):
what each batch a torch DataLoader yields holds, how many batches come out (len() included),
under one and two simulated ranks, across epochs and a resumption, and the errors for streams
too small for the method."""

import pytest
import torch.utils.data

import ferry

# Three streams whose sample ids tell them apart: stream s holds ids OFFSET[s] + i.
SIZES = [200, 300, 57]
OFFSET = [0, 1000, 5000]


def _stream_of(sample_id: int) -> int:
    return max(s for s in range(len(OFFSET)) if sample_id >= OFFSET[s])


@pytest.fixture(scope="module")
def stream_dirs(tmp_path_factory) -> list:
    root = tmp_path_factory.mktemp("streams")
    dirs = []
    for s, (size, offset) in enumerate(zip(SIZES, OFFSET)):
        out = root / f"s{s}"
        with ferry.MDSWriter(out=str(out), columns={"id": "int"}, size_limit="1kb") as writer:
            for i in range(size):
                writer.write({"id": offset + i})
        dirs.append(out)
    return dirs


def _dataset(stream_dirs, method, batch, count=3, proportions=None, **kwargs):
    streams = [ferry.Stream(local=str(d), **({} if proportions is None else
                                              {"proportion": proportions[i]}))
               for i, d in enumerate(stream_dirs[:count])]
    return ferry.StreamingDataset(streams=streams, batching_method=method, batch_size=batch,
                                  num_canonical_nodes=2, **kwargs)


def _batches(ds, batch, workers=0, **kwargs):
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers, **kwargs)
    out = [[int(i) for i in b["id"]] for b in loader]
    assert len(loader) == len(out)
    return out


def _streams(batch_ids):
    return [_stream_of(i) for i in batch_ids]


def _rank(monkeypatch, world_size, rank):
    monkeypatch.setenv("WORLD_SIZE", str(world_size))
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(world_size))
    monkeypatch.setenv("LOCAL_RANK", str(rank))


@pytest.mark.parametrize("workers", [0, 3])
@pytest.mark.parametrize("batch", [4, 7])
@pytest.mark.parametrize("shuffle", [False, True])
def test_per_stream_every_batch_from_one_stream(stream_dirs, workers, batch, shuffle):
    ds = _dataset(stream_dirs, "per_stream", batch, shuffle=shuffle)
    batches = _batches(ds, batch, workers)
    per_stream = [0, 0, 0]
    for b in batches:
        assert len(b) == batch
        assert len(set(_streams(b))) == 1, f"batch {b} mixes streams"
        per_stream[_stream_of(b[0])] += 1
    # One rank: each stream gives its whole batches, its partial last one left out.
    assert per_stream == [n // batch for n in SIZES]
    ids = [i for b in batches for i in b]
    assert len(ids) == len(set(ids)) == len(ds)
    # The streams take turns at random, not one after the other.
    firsts = [_stream_of(b[0]) for b in batches]
    assert firsts != sorted(firsts)


def test_per_stream_gives_every_rank_of_a_step_the_same_stream(stream_dirs, monkeypatch):
    per_rank = []
    for rank in range(2):
        _rank(monkeypatch, 2, rank)
        ds = _dataset(stream_dirs, "per_stream", 4, shuffle=True)
        per_rank.append(_batches(ds, 4, workers=2))
        assert len(ds) == 4 * len(per_rank[-1])
    assert len(per_rank[0]) == len(per_rank[1])
    for step, (a, b) in enumerate(zip(*per_rank)):
        assert len(set(_streams(a + b))) == 1, f"step {step}: {a} and {b}"
    ids = [i for batches in per_rank for b in batches for i in b]
    assert len(ids) == len(set(ids))
    # 2 ranks x 4: stream s gives floor(ceil(n / 2) / 4) global batches of 8.
    assert len(ids) == sum((n + 1) // 2 // 4 * 8 for n in SIZES)


@pytest.mark.parametrize("batch, parts, steps", [
    # Shares of 200/557, 300/557, 57/557: floor, then the largest remainders.
    (8, [3, 4, 1], 57),   # min(200 // 3, 300 // 4, 57 // 1)
    (10, [4, 5, 1], 50),  # min(200 // 4, 300 // 5, 57 // 1)
])
def test_stratified_every_batch_holds_each_streams_share(stream_dirs, batch, parts, steps):
    ds = _dataset(stream_dirs, "stratified", batch, shuffle=True)
    batches = _batches(ds, batch, workers=2)
    assert len(batches) == steps and len(ds) == steps * batch
    for b in batches:
        streams = _streams(b)
        assert [streams.count(s) for s in range(3)] == parts, b
    ids = [i for b in batches for i in b]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("proportions, batch, parts", [((2, 5), 7, [2, 5]), ((2, 2), 7, [3, 4]),
                                                       ((5, 2), 4, [3, 1])])
def test_stratified_follows_the_streams_proportions(stream_dirs, proportions, batch, parts):
    ds = _dataset(stream_dirs, "stratified", batch, count=2, proportions=proportions,
                  shuffle=True)
    batches = _batches(ds, batch)
    for b in batches:
        streams = _streams(b)
        assert [streams.count(s) for s in range(2)] == parts, b
    chosen = [s.choose for s in ds.streams]
    assert len(batches) == min(c // p for c, p in zip(chosen, parts))


@pytest.mark.parametrize("world_size", [1, 2])
def test_device_per_stream_every_device_batch_from_one_stream(stream_dirs, monkeypatch,
                                                             world_size):
    per_rank = []
    for rank in range(world_size):
        _rank(monkeypatch, world_size, rank)
        ds = _dataset(stream_dirs, "device_per_stream", 5, shuffle=True)
        per_rank.append(_batches(ds, 5, workers=2))
        assert len(ds) == 5 * len(per_rank[-1])
        for b in per_rank[-1]:
            assert len(b) == 5 and len(set(_streams(b))) == 1, b
    assert len({len(batches) for batches in per_rank}) == 1, "every rank as many batches"
    firsts = {_stream_of(b[0]) for batches in per_rank for b in batches}
    assert firsts == {0, 1, 2}
    if world_size == 2:
        # Device batches of one step may come from different streams.
        assert any(_stream_of(a[0]) != _stream_of(b[0]) for a, b in zip(*per_rank))


def test_with_one_stream_only_the_partial_last_batch_is_left_out(stream_dirs):
    for method in ("per_stream", "stratified", "device_per_stream"):
        ds = _dataset(stream_dirs, method, 7, count=1, shuffle=True)
        random = _dataset(stream_dirs, "random", 7, count=1, shuffle=True)
        got = _batches(ds, 7)
        assert len(ds) == 200 // 7 * 7 == 7 * len(got)
        if method == "per_stream":
            # One stream: the random order's whole batches.
            assert got == _batches(random, 7)[:len(got)]


def test_which_stream_each_batch_draws_from_changes_with_the_epoch(stream_dirs):
    for shuffle in (False, True):
        ds = _dataset(stream_dirs, "per_stream", 4, shuffle=shuffle)
        loader = torch.utils.data.DataLoader(ds, batch_size=4)
        epochs = [[_stream_of(int(b["id"][0])) for b in loader] for _ in range(2)]
        assert (epochs[0] != epochs[1]) == shuffle


@pytest.mark.parametrize("method", ["per_stream", "stratified", "device_per_stream"])
def test_a_state_dict_resumes_at_the_next_batch(stream_dirs, method):
    def loader():
        return ferry.StreamingDataLoader(_dataset(stream_dirs, method, 8, shuffle=True),
                                         batch_size=8, num_workers=2)
    full = [[int(i) for i in b["id"]] for b in loader()]
    first = loader()
    got = []
    for b in first:
        got.append([int(i) for i in b["id"]])
        if len(got) == 5:
            break
    state = first.state_dict()
    resumed = loader()
    resumed.load_state_dict(state)
    got += [[int(i) for i in b["id"]] for b in resumed]
    assert got == full


@pytest.mark.parametrize("method, batch, match", [
    ("per_stream", 64, r"stream 2 does not have enough samples this epoch \(57\) for one "
                       r"complete global batch of 64"),
    ("device_per_stream", 64, r"stream 2 does not have enough samples .*device batch of 64"),
    # 4 x 57 / 557 rounds to 0, and the sample left over goes to stream 0.
    ("stratified", 4, "Number of samples for stream 2 in each global batch of 4 is 0"),
])
def test_a_stream_too_small_for_the_method_is_a_value_error(stream_dirs, method, batch, match):
    ds = _dataset(stream_dirs, method, batch)
    with pytest.raises(ValueError, match=match):
        list(torch.utils.data.DataLoader(ds, batch_size=batch))
    with pytest.raises(ValueError, match=match):
        len(ds)


def test_a_state_at_the_end_of_an_epoch_resumes_into_the_next(stream_dirs):
    def loader():
        return ferry.StreamingDataLoader(_dataset(stream_dirs, "per_stream", 8, shuffle=True),
                                         batch_size=8, num_workers=2)
    first = loader()
    epoch0 = [[int(i) for i in b["id"]] for b in first]
    state = first.state_dict()
    epoch1 = [[int(i) for i in b["id"]] for b in first]
    resumed = loader()
    resumed.load_state_dict(state)
    assert [[int(i) for i in b["id"]] for b in resumed] == epoch1 != epoch0
